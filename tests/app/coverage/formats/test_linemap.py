"""LineMap: the largest count of a line met twice, bad records skipped, limits."""

from __future__ import annotations

import pytest

from app.coverage.formats.linemap import LineMap, whole
from app.coverage.limits import ParseLimits
from app.errors import MalformedReport, ReportTooLarge


def test_a_line_met_twice_keeps_its_largest_count_and_a_bad_one_is_skipped() -> None:
    out = LineMap("X", ParseLimits(max_line_number=100))
    fc = out.file("/src/a.x")
    assert out.file("/src/a.x") is fc
    for ln, hits in ((3, 2), (3, 5), (3, 1), (4, 0), (0, 1), (101, 1), (5, -1), ("6", 1)):
        out.hit(fc, ln, hits, f"{ln}:{hits}", f"record {ln}")
    out.partial(fc, 4)
    report = out.done()
    assert report.files["/src/a.x"].lines == {3: 5, 4: 1}
    br = report.files["/src/a.x"].branches[4]
    assert (br.covered, br.total) == (1, 2)
    assert report.skipped.count == 4
    assert "`0:1` at record 0" in report.skipped.summary()


def test_a_report_of_only_bad_records_is_refused_and_the_record_limit_holds() -> None:
    out = LineMap("X", ParseLimits())
    out.hit(out.file("a"), 0, 1, "0:1", "record 1")
    with pytest.raises(MalformedReport, match="no record could be read"):
        out.done()
    small = LineMap("X", ParseLimits(max_lines=1))
    small.hit(small.file("a"), 1, 1, "", "")
    with pytest.raises(ReportTooLarge):
        small.hit(small.file("a"), 2, 1, "", "")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (3, 3),
        (" 12 ", 12),
        ("-2", -2),
        ("1e3", None),
        (True, None),
        ("9" * 30, None),
        ("\u0661", None),
    ],
)
def test_whole_reads_an_int_or_a_string_of_one(value: object, expected: int | None) -> None:
    assert whole(value) == expected
