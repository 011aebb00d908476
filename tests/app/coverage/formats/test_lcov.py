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


def test_line_numbers_beyond_the_configured_maximum_are_malformed() -> None:
    raw = b"SF:a.c\nDA:501,1\nend_of_record\n"
    assert parse_report(raw).files["a.c"].lines == {501: 1}
    with pytest.raises(MalformedReport, match=r"outside 1\.\.500"):
        parse_report(raw, limits=ParseLimits(max_line_number=500))
