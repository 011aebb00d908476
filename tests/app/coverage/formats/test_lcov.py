"""LCOV tracefiles: sections of one file add up, what adds no coverage, and the limits."""

from __future__ import annotations

import pytest

from app.coverage import ParseLimits, parse_report
from app.errors import MalformedReport

pytestmark = pytest.mark.timeout(20)


def test_lcov_sections_of_one_file_add_hits_and_union_branches_by_identity() -> None:
    raw = (
        b"TN:unit\nSF:a.c\nDA:1,2\nDA:2,0\nBRDA:1,0,0,1\nBRDA:1,0,1,-\nend_of_record\n"
        b"TN:integration\nSF:./a.c\nDA:1,1\nDA:2,4\nBRDA:1,0,0,0\nBRDA:1,0,1,7\nend_of_record\n"
    )
    fc = parse_report(raw).files["a.c"]
    assert fc.lines == {1: 3, 2: 4}
    assert (fc.branches[1].covered, fc.branches[1].total) == (2, 2)


def test_lcov_function_records_and_checksums_do_not_change_line_coverage() -> None:
    raw = (
        b"TN:\nSF:a.c\nFN:3,5,main\nFNL:0,3,5\nFNA:0,1,main\nFNDA:1,main\nFNF:1\nFNH:1\n"
        b"DA:3,1,abcdef\nDA:4,0\nDA:0,9\nLF:2\nLH:1\nBRF:0\nBRH:0\nend_of_record\n"
    )
    assert parse_report(raw).files["a.c"].lines == {3: 1, 4: 0}


def test_a_line_number_beyond_the_configured_maximum_is_a_skipped_record() -> None:
    raw = b"SF:a.c\nDA:501,1\nDA:2,1\nend_of_record\n"
    assert parse_report(raw).files["a.c"].lines == {501: 1, 2: 1}
    report = parse_report(raw, limits=ParseLimits(max_line_number=500))
    assert report.files["a.c"].lines == {2: 1}
    assert report.skipped.summary() == "1 record skipped: `DA:501,1` at line 2"


def test_bad_lcov_records_are_skipped_counted_and_named_and_the_rest_is_kept() -> None:
    """As Codecov and ``lcov --ignore-errors`` do: each bad record alone is lost."""
    raw = (
        b"TN:\nSF:a.c\nFN:1,main\nFNDA:,not_hit\nDA:0,skipped\nDA:1,4\nDA:DA:130,0\n"
        b"DA:2,lots\nDA:3\nBRDA:1,0\nBRDA:1,0,0,x\nBRDA:1,0,1,2\nDA:4,nan\nLF:two\nLH:-1\n"
        b"DA:99999999999,1\nDA:5,0\nend_of_record\n"
    )
    report = parse_report(raw)
    fc = report.files["a.c"]
    assert fc.lines == {1: 4, 5: 0}
    assert (fc.branches[1].covered, fc.branches[1].total) == (1, 1)
    assert report.skipped.count == 11
    assert report.skipped.summary() == (
        "11 records skipped: `FNDA:,not_hit` at line 4, `DA:0,skipped` at line 5, "
        "`DA:DA:130,0` at line 7, `DA:2,lots` at line 8, `DA:3` at line 9, ..."
    )


def test_an_lcov_report_of_only_bad_records_is_refused_naming_them() -> None:
    with pytest.raises(
        MalformedReport,
        match=r"no record could be read; 2 records skipped: "
        r"`DA:0,skipped` at line 2, `DA:x,1` at line 3",
    ):
        parse_report(b"SF:a.c\nDA:0,skipped\nDA:x,1\nend_of_record\n")
