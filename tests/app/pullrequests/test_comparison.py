"""What a comparison holds: coverage without lines is unknown, a change needs
both sides, a file's change and its uncovered patch lines."""

from __future__ import annotations

from app.coverage import Totals
from app.pullrequests.comparison import FileComparison, change, coverage_of


def test_coverage_without_lines_is_unknown_not_zero() -> None:
    assert coverage_of(None) is None
    assert coverage_of(Totals(1, 0, 0, 0, 0)) is None
    assert coverage_of(Totals(1, 4, 3, 1, 0)) == 75.0


def test_a_change_needs_both_sides_and_is_rounded_to_five_places() -> None:
    assert change(None, 80.0) is None and change(80.0, None) is None
    assert change(75.0, 80.0) == 5.0
    assert change(100 / 3, 200 / 3) == 33.33333


def test_a_files_change_and_its_uncovered_patch_lines() -> None:
    moved = FileComparison(
        "a.py",
        "a.py",
        head=Totals(1, 4, 4, 0, 0),
        base=Totals(1, 4, 2, 2, 0),
        patch_misses=(3,),
        patch_partials=(5, 6),
    )
    assert moved.change == 50.0 and moved.patch_uncovered == 3
    added = FileComparison("b.py", None, head=Totals(1, 1, 1, 0, 0), base=None)
    assert added.change is None and added.patch_uncovered == 0
