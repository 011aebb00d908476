"""Fuzz the six newer parsers: a Report or that format's own ReportError, never a crash.

Seeds are the committed real-tool fixtures and written reports of each
format; Hypothesis mutates them (bytes replaced, inserted, deleted,
truncated, chunks repeated, the format's tokens and odd numbers spliced
in). ``COVWORKER_TEST_SCALE=full`` runs the issue's 10,000 inputs per
parser; the default is a reduced count for the shared machine.
"""

from __future__ import annotations

import gzip

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.coverage import Report, parse_report
from app.errors import MalformedReport, ReportError
from tests.support.faults.harness import sized
from tests.support.paths import REPORTS
from tests.support.writers import WRITERS

pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600)]

EXAMPLES = sized(300, 10_000)
REPORTS = REPORTS
SAMPLE = {
    "src/a.x": {1: (2, (1, 0)), 2: (0, None), 5: (3, None)},
    "lib/b.x": {7: (1, (0, 0, 1, 4))},
}

#: format -> (its name in errors, fixture globs, tokens worth splicing in)
FORMATS: dict[str, tuple[str, list[str], list[bytes]]] = {
    "istanbul": ("Istanbul JSON", ["js/*.coverage-final.json"],
                 [b'"statementMap"', b'"s"', b'"b"', b'{"start": {}}', b'"line": ', b"[", b"{"]),
    "clover": ("Clover XML", ["js/*.clover.xml"],
               [b"<line ", b'num="', b'count="', b'type="cond"', b'truecount="', b"<file ",
                b"<testproject>", b"</", b'<!DOCTYPE x [<!ENTITY e "e">]>', b"&e;"]),
    "simplecov": ("SimpleCov JSON", ["simplecov/*.resultset.json"],
                  [b'"lines": ', b'"branches": ', b"[:if, 0, 1, 2, 3, 4]", b"null", b'"ignored"']),
    "llvm": ("llvm-cov export JSON", ["llvm/*.json"],
             [b'"segments": ', b"[1, 1, 5, true, true, false]", b'"branches": ', b"true"]),
    "gcov": ("gcov JSON", ["gcovjson/*.gcov.json.gz"],
             [b'"line_number": ', b'"count": ', b'"branches": ', b'"file": ', b'{"count": 1}']),
    "opencover": ("OpenCover XML", [],
                  [b"<SequencePoint ", b'vc="', b'sl="', b'fileid="', b"<BranchPoint ",
                   b"<File ", b'uid="', b'skippedDueTo="x"']),
}  # fmt: skip
NUMBERS = [b"-1", b"0", b"1e+0", b"99999999999999999999", b"16707566", b"NaN", b'""', b"1.5"]


def seeds(fmt: str) -> list[bytes]:
    found = []
    for pattern in FORMATS[fmt][1]:
        for path in sorted(REPORTS.glob(pattern)):
            raw = path.read_bytes()
            found.append(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
    return [*found, WRITERS[fmt](SAMPLE)]


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
    raw = bytes(data)
    return gzip.compress(raw) if fmt == "gcov" and draw(st.booleans()) else raw


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_a_new_parser_answers_every_mutated_report_with_a_report_or_its_own_error(
    fmt: str,
) -> None:
    name = FORMATS[fmt][0]
    for seed in seeds(fmt):
        assert isinstance(parse_report(seed), Report)
    outcomes = {"parsed": 0, "refused": 0, "its own error": 0}

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(raw=mutated(fmt))
    def answers(raw: bytes) -> None:
        try:
            parse_report(raw)
            outcomes["parsed"] += 1
        except ReportError as exc:
            assert str(exc).strip(), "a ReportError must say why"
            outcomes["refused"] += 1
            if isinstance(exc, MalformedReport) and exc.fmt == name:
                outcomes["its own error"] += 1

    answers()
    print(f"\nFIGURES fuzz-{fmt} {outcomes}")
    assert outcomes["parsed"] + outcomes["refused"] >= EXAMPLES * 0.9
    assert outcomes["its own error"] > 0  # the mutations reached the parser itself
