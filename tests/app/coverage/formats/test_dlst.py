"""D coverage listings: LDC's own listing of ``tests/fixtures/programs/d``
(``tests/fixtures/regenerate-more.sh dlst``) against LDC's own summary,
several listings in one report, bad lines skipped."""

from __future__ import annotations

import pytest

from app.coverage import detect_format, parse_report
from app.coverage.detect import DLST
from app.coverage.limits import NO_CODE
from tests.app.coverage.formats.conftest import refused
from tests.support.paths import REPORTS

pytestmark = pytest.mark.timeout(60)

LISTING = (REPORTS / "dlst" / "source-calc.lst").read_bytes()


def test_ldcs_listing_gives_each_counted_line_and_ldcs_own_percentage() -> None:
    """classify(5) and classify(0) ran: line 5 twice, ``return -1`` (8)
    never; sum's loop header 12 times for 3 items; neverCalled's body (23)
    never; the unittest's three asserts once. LDC's summary: 84% covered."""
    report = parse_report(LISTING)
    assert detect_format(LISTING) == DLST
    lines = report.files["source/calc.d"].lines
    assert lines == {5: 2, 6: 1, 7: 1, 8: 0, 9: 1, 14: 1, 15: 12, 16: 3, 17: 1, 23: 0,
                     28: 1, 29: 1, 30: 1}  # fmt: skip
    summary = LISTING.rstrip().rsplit(b"\n", 1)[1]
    assert summary == b"source/calc.d is 84% covered"
    assert 100 * sum(1 for h in lines.values() if h) // len(lines) == 84


def test_several_listings_are_several_files_and_a_bad_line_is_skipped() -> None:
    other = b"      3|a();\n   oops|b();\n       |\nlib/x.d is 100% covered\n"
    report = parse_report(LISTING + b"\n" + other)
    assert report.files["lib/x.d"].lines == {1: 3}
    assert len(report.files["source/calc.d"].lines) == 13
    oops = (LISTING + b"\n" + other).split(b"\n").index(b"   oops|b();") + 1
    assert report.skipped.count == 1 and report.skipped.named[0][1] == f"line {oops}"


def test_a_module_with_no_code_is_a_report_of_no_files_that_says_so() -> None:
    report = parse_report(b"       |// only comments\n       |\napp.d has no code\n")
    assert report.files == {} and report.warnings == [NO_CODE]


def test_a_listing_without_its_summary_or_with_no_readable_line_is_refused() -> None:
    torn = b"      1|a();\nlib/x.d is 100% covered\n      1|c();\n      2|d();\n"
    assert detect_format(torn) == DLST  # a listing cut short after another's summary
    error = refused(torn, "D coverage listing", "no summary line naming its file")
    assert error.line == 4
    refused(
        b"       |// x\n   oops|b();\nlib/x.d is 0% covered\n", "D coverage listing", "no record"
    )
