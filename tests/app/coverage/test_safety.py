"""Nothing in a report is executed, fetched or opened, and bad bytes only ever
raise ReportError (the contract the later fuzzing issue builds on)."""

from __future__ import annotations

import builtins
import io
import os
import socket

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.coverage import Report, parse_report
from app.coverage.detect import tried
from app.errors import ReportError
from tests.support.coverage_strategies import PROPERTY_SETTINGS
from tests.support.paths import REPORTS

pytestmark = pytest.mark.timeout(60)

SEEDS = [
    (REPORTS / name).read_bytes()
    for name in (
        "coveragepy/combined.xml",
        "coveragepy/combined.json",
        "coveragepy/combined.info",
        "go/count-all.out",
        "jacoco/combined.xml",
        "c/combined.info",
        "c/run-sum.xml",
    )
]

HOSTILE = [
    b'<?xml version="1.0"?>\n<!DOCTYPE coverage SYSTEM "http://127.0.0.1:9/coverage-04.dtd">\n'
    b"<coverage><sources><source>/etc</source></sources><packages><package><classes>"
    b'<class filename="../../etc/passwd"><lines><line number="1" hits="1"/></lines></class>'
    b'<class filename="$(rm -rf /).py"><lines><line number="1" hits="0"/></lines></class>'
    b"</classes></package></packages></coverage>",
    b'<!DOCTYPE report SYSTEM "file:///etc/passwd"><report name="r">'
    b'<package name="../../etc"><sourcefile name="shadow"><line nr="1" mi="0" ci="1"/>'
    b"</sourcefile></package></report>",
    b"SF:/etc/passwd\nDA:1,1\nend_of_record\nSF:`id`.c\nDA:1,0\nend_of_record\n",
    b'{"meta": {"version": "7"}, "files": {"/proc/self/environ": {"executed_lines": [1]}}}',
    b"mode: set\n/dev/zero:1.1,2.2 1 1\n",
]


def _refuse(*args: object, **kwargs: object) -> None:
    raise AssertionError(f"a parser tried to open or connect: {args!r}")


@pytest.mark.parametrize("raw", HOSTILE, ids=["cobertura", "jacoco", "lcov", "json", "go"])
def test_paths_in_a_report_are_only_strings_and_no_dtd_is_fetched(
    raw: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    for target, name in ((builtins, "open"), (io, "open"), (os, "open"), (socket, "socket")):
        monkeypatch.setattr(target, name, _refuse)
    report = parse_report(raw)
    assert report.totals().lines == sum(len(fc.lines) for fc in report.files.values()) >= 1
    assert all(isinstance(path, str) for path in report.files)


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    raw = bytearray(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 8))):
        at = draw(st.integers(0, len(raw) - 1))
        action = draw(st.sampled_from(["flip", "cut", "insert", "delete"]))
        if action == "flip":
            raw[at] = draw(st.integers(0, 255))
        elif action == "cut":
            del raw[at:]
            if not raw:
                break
        elif action == "insert":
            raw[at:at] = draw(st.binary(min_size=1, max_size=16))
        else:
            del raw[at : at + draw(st.integers(1, 64))]
            if not raw:
                break
    return bytes(raw)


def parses_or_fails_cleanly(raw: bytes) -> None:
    """Any other exception type escaping parse_report fails the test."""
    try:
        report = parse_report(raw)
    except ReportError as exc:
        assert 10 < len(str(exc)) < 200 + len(tried())  # a reason, at most the formats tried
    else:
        assert isinstance(report, Report)
        assert report.totals().lines >= 0


@PROPERTY_SETTINGS
@given(mutated())
def test_a_damaged_real_report_parses_or_raises_a_report_error(raw: bytes) -> None:
    parses_or_fails_cleanly(raw)


@PROPERTY_SETTINGS
@given(st.binary(max_size=512))
def test_arbitrary_bytes_parse_or_raise_a_report_error(raw: bytes) -> None:
    parses_or_fails_cleanly(raw)
