"""Fuzz every parser through ``parse_report``: a Report or a ReportError, never a crash or hang.

Inputs are real tool reports (``tests/fixtures/reports``) and synthetic ones
of each format, mutated by Hypothesis: bytes replaced, inserted, deleted,
truncated, chunks repeated, and the format's own tokens (record tags,
attributes, huge and negative numbers, entity declarations) spliced in. A
parse that outlives ``HANG_S`` counts as a hang (a SIGALRM interrupts it).
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.coverage import Report, parse_report
from app.errors import ReportError
from benchmarks.emit import to_cobertura, to_coverage_json, to_go, to_jacoco, to_lcov
from tests.support.faults.harness import job_report, sized
from tests.support.paths import REPORTS

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

#: Generated inputs per parser: the issue's 10,000 at full scale.
EXAMPLES = sized(400, 10_000)
#: Seconds one parse may take before it counts as a hang.
HANG_S = 10

FIXTURES = REPORTS

#: format -> (fixture globs, writer of a synthetic report, tokens worth splicing in)
FORMATS: dict[str, tuple[list[str], object, list[bytes]]] = {
    "lcov": (
        ["*/*.info"],
        to_lcov,
        [b"SF:", b"DA:", b"BRDA:", b"FN:", b"FNDA:", b"BRF:", b"LF:", b"end_of_record", b"TN:"],
    ),
    "cobertura": (
        ["coveragepy/*.xml", "c/*.xml"],
        to_cobertura,
        [
            b"<line ",
            b'number="',
            b'hits="',
            b'branch="true"',
            b'condition-coverage="',
            b"<class ",
            b'filename="',
            b"</",
            b'<!DOCTYPE x [<!ENTITY e "e">]>',
            b"&e;",
        ],
    ),
    "coverage_json": (
        ["coveragepy/*.json"],
        to_coverage_json,
        [
            b'"executed_lines"',
            b'"missing_lines"',
            b'"executed_branches"',
            b'"files"',
            b'"meta"',
            b"null",
            b"[[",
            b"{",
            b"1e999",
            b"true",
        ],
    ),
    "go": (
        ["go/*.out"],
        to_go,
        [b"mode: set\n", b"mode: count\n", b"mode: atomic\n", b":", b".", b",", b" 1 ", b"\n"],
    ),
    "jacoco": (
        ["jacoco/*.xml"],
        to_jacoco,
        [
            b"<package ",
            b"<sourcefile ",
            b"<line ",
            b'nr="',
            b'mi="',
            b'ci="',
            b'mb="',
            b'cb="',
            b"<counter ",
            b"</",
        ],
    ),
}
NUMBERS = [b"0", b"-1", b"18446744073709551617", b"99999999999999999999999", b"1.5", b"NaN"]


def seeds(fmt: str) -> list[bytes]:
    globs, write, _ = FORMATS[fmt]
    found = [p.read_bytes() for g in globs for p in sorted(FIXTURES.glob(g))]
    return [*found, write(job_report(7))]  # type: ignore[operator]


@st.composite
def mutated(draw: st.DrawFn, fmt: str) -> bytes:
    data = bytearray(draw(st.sampled_from(seeds(fmt))))
    tokens = FORMATS[fmt][2] + NUMBERS
    for _ in range(draw(st.sampled_from([0, 1, 1, 1, 2, 2, 3, 5, 10]))):
        op = draw(st.sampled_from(["replace", "insert", "delete", "truncate", "repeat"]))
        at = draw(st.integers(0, len(data)))
        if op == "replace" and at < len(data):
            data[at] = draw(st.integers(0, 255))
        elif op == "insert":
            data[at:at] = draw(st.sampled_from(tokens) | st.binary(max_size=12))
        elif op == "delete":
            del data[at : at + draw(st.integers(1, 64))]
        elif op == "truncate":
            del data[at:]
        elif op == "repeat":
            chunk = bytes(data[at : at + draw(st.integers(1, 80))])
            data[at:at] = chunk * draw(st.integers(1, 200))
    return bytes(data)


class Hang(Exception):
    pass


@contextmanager
def hang_guard(seconds: int) -> Iterator[None]:
    def expired(signum: int, frame: FrameType | None) -> None:
        raise Hang(f"no answer within {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_a_parser_answers_every_mutated_report_with_a_report_or_a_report_error(fmt: str) -> None:
    for seed in seeds(fmt):  # the seeds themselves are good reports
        assert isinstance(parse_report(seed), Report)

    outcomes = {"parsed": 0, "refused": 0}

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(raw=mutated(fmt))
    def answers(raw: bytes) -> None:
        with hang_guard(HANG_S):
            try:
                parse_report(raw)
                outcomes["parsed"] += 1
            except ReportError as exc:
                assert str(exc).strip(), "a ReportError must say why"
                outcomes["refused"] += 1

    answers()
    print(f"\nFIGURES fuzz-{fmt} {outcomes}")
    assert outcomes["parsed"] + outcomes["refused"] >= EXAMPLES * 0.9
