"""Fuzz every parser through ``parse_report``: a Report or a ReportError, never a crash or hang.

One test over the writer registry (``tests.support.writers.WRITERS``), all
its formats. Seeds are the committed real-tool fixtures
(``tests/fixtures/reports``) and reports of each format written by the
registry; Hypothesis mutates them: bytes replaced, inserted, deleted,
truncated, chunks repeated, and the format's own tokens (record tags,
attributes, huge and negative numbers, entity declarations) spliced in. A
parse that outlives ``HANG_S`` counts as a hang (a SIGALRM interrupts it).
``COVWORKER_TEST_SCALE=full`` runs 10,000 inputs per parser; the default is
a reduced count for the shared machine.
"""

from __future__ import annotations

import gzip
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.coverage import Report, parse_report
from app.errors import MalformedReport, ReportError
from tests.support.faults.harness import job_report, sized
from tests.support.paths import REPORTS
from tests.support.writers import RUN_FORMATS, WRITERS
from tests.support.writers_a import FUZZ

pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600)]

#: Generated inputs per parser.
EXAMPLES = sized(400, 10_000)
#: Seconds one parse may take before it counts as a hang.
HANG_S = 10
#: A plain run for the newer formats' writers: odd branch counts, an untaken pair.
SAMPLE = {
    "src/a.x": {1: (2, (1, 0)), 2: (0, None), 5: (3, None)},
    "lib/b.x": {7: (1, (0, 0, 1, 4))},
}

#: format -> (its name in errors, fixture globs, tokens worth splicing in)
FORMATS: dict[str, tuple[str, list[str], list[bytes]]] = {
    "lcov": (
        "LCOV",
        ["*/*.info"],
        [b"SF:", b"DA:", b"BRDA:", b"FN:", b"FNDA:", b"BRF:", b"LF:", b"end_of_record", b"TN:"],
    ),
    "cobertura": (
        "Cobertura XML",
        ["coveragepy/*.xml", "c/*.xml"],
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
        "coverage.py JSON",
        ["coveragepy/*.json"],
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
        "Go coverprofile",
        ["go/*.out"],
        [b"mode: set\n", b"mode: count\n", b"mode: atomic\n", b":", b".", b",", b" 1 ", b"\n"],
    ),
    "jacoco": (
        "JaCoCo XML",
        ["jacoco/*.xml"],
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
    "gcov_text": ("gcov text", ["gcovjson/*.c.gcov"],
                  [b"        -:    0:Source:", b"#####", b"=====", b"branch  0 taken ", b"1*",
                   b"never executed", b"------------------\n", b"LCOV_EXCL_START", b"-block  0",
                   b"call    0 returned 100%"]),
    "flow": ("Flow coverage JSON", ["flow/*.json"],
             [b'"covered_locs": ', b'"uncovered_locs": ', b'"start": ', b'"line": ', b"{",
              b"null"]),
    "codecov_v1": ("Codecov v1 JSON", [],
                   [b'"coverage": ', b'"1/2"', b"null", b'"lines": ', b"true"]),
    "salesforce": ("Salesforce Apex JSON", [], [b'"name": ', b'"lines": ', b'"3": ', b"{}", b"[]"]),
    "gap": ("GAP coverage JSON", [], [b'{"Type":"S","File":"x"}\n', b'{"Type":"E","Line":', b"\n"]),
    "elm": ("elm-coverage JSON", [], [b'"from": ', b'"to": ', b'"line": ', b'"count": ', b"{"]),
    "dlst": ("D coverage listing", ["dlst/*.lst"],
             [b"0000000|", b"      1|", b"       |", b"\n", b" is 50% covered\n",
              b" has no code\n"]),
    "bullseye": ("Bullseye XML", [],
                 [b'<probe line="', b'kind="decision" ', b'event="true"', b"<block ", b"<folder ",
                  b"</", b'<!DOCTYPE x [<!ENTITY e "e">]>']),
    "visualstudio": ("Visual Studio coverage XML", [],
                     [b"<range ", b'covered="partial" ', b'start_line="', b'end_line="',
                      b"<source_file ", b'source_id="', b"</module>"]),
    "mono": ("Mono coverage XML", [],
             [b"<statement ", b'line="', b'counter="', b"<method ", b'filename="', b"</"]),
    "opencover": ("OpenCover XML", [],
                  [b"<SequencePoint ", b'vc="', b'sl="', b'fileid="', b"<BranchPoint ",
                   b"<File ", b'uid="', b'skippedDueTo="x"']),
}  # fmt: skip
FORMATS.update(FUZZ)
NUMBERS = [b"-1", b"0", b"1e+0", b"1.5", b"NaN", b'""']
NUMBERS += [
    b"16707566",
    b"99999999999999999999",
    b"99999999999999999999999",
    b"18446744073709551617",
]


def seeds(fmt: str) -> list[bytes]:
    found = []
    for pattern in FORMATS[fmt][1]:
        for path in sorted(REPORTS.glob(pattern)):
            raw = path.read_bytes()
            found.append(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
    written = [WRITERS[fmt](job_report(7))]
    if fmt in RUN_FORMATS:
        written.append(WRITERS[fmt](SAMPLE))  # type: ignore[arg-type]  # they take a Run
    return [*found, *written]


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


def test_the_fuzzer_covers_every_format_of_the_writer_registry() -> None:
    assert set(FORMATS) == set(WRITERS)


@pytest.mark.parametrize("fmt", sorted(WRITERS))
def test_a_parser_answers_every_mutated_report_with_a_report_or_a_report_error(fmt: str) -> None:
    name = FORMATS[fmt][0]
    for seed in seeds(fmt):  # the seeds themselves are good reports
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
        with hang_guard(HANG_S):
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
