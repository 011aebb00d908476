"""Go coverprofiles: repeated blocks by mode, blocks spanning lines, and the limits."""

from __future__ import annotations

import pytest

from app.coverage import ParseLimits, parse_report
from app.errors import ReportTooLarge

pytestmark = pytest.mark.timeout(20)


def test_go_repeated_blocks_add_in_count_mode_and_or_in_set_mode() -> None:
    body = b"a.go:3.10,4.2 1 %d\na.go:3.10,4.2 1 %d\n"
    count = parse_report(b"mode: count\n" + body % (2, 3))
    assert count.files["a.go"].lines == {3: 5, 4: 5}
    single = parse_report(b"mode: set\n" + body % (0, 1) + b"mode: set\n" + body % (1, 0))
    assert single.files["a.go"].lines == {3: 1, 4: 1}


def test_a_go_block_spanning_lines_covers_each_of_them() -> None:
    report = parse_report(b"mode: atomic\nx/a.go:10.5,14.2 4 7\nx/a.go:14.2,16.3 1 0\n")
    fc = report.files["x/a.go"]
    assert fc.lines == {10: 7, 11: 7, 12: 7, 13: 7, 14: 7, 15: 0, 16: 0}
    assert set(fc.branches) == {14}
    assert report.totals().partials == 1


def test_a_go_profile_of_a_package_without_statements_is_an_empty_report() -> None:
    assert parse_report(b"mode: set\n").files == {}


def test_import_paths_of_one_file_from_two_modules_merge_into_its_repository_path() -> None:
    """The module path is dropped (``host/owner/repo`` and a ``/vN`` suffix),
    so the same file named under two major versions is one file."""
    raw = (
        b"mode: count\ngithub.com/o/r/pkg/a.go:1.1,1.9 1 2\n"
        b"github.com/o/r/v2/pkg/a.go:1.1,1.9 1 3\ngithub.com/o/r/v2/pkg/a.go:2.1,2.9 1 0\n"
    )
    assert (
        parse_report(raw).files
        == parse_report(b"mode: count\npkg/a.go:1.1,1.9 1 5\npkg/a.go:2.1,2.9 1 0\n").files
    )


def test_a_go_block_counts_each_line_it_spans_against_the_line_limit() -> None:
    raw = b"mode: set\na.go:1.1,11.2 1 1\n"
    assert parse_report(raw, limits=ParseLimits(max_lines=11)).totals().lines == 11
    with pytest.raises(ReportTooLarge, match="more than 10 line records"):
        parse_report(raw, limits=ParseLimits(max_lines=10))
