"""Cached per-file totals compared: each file added, removed or changed, and
no change without a base."""

from __future__ import annotations

from app.coverage import Totals
from app.pullrequests.cached_totals import compare_totals, file_changes


def test_each_file_is_added_removed_or_changed_with_its_misses_change() -> None:
    base = {"a.py": Totals(1, 2, 1, 1, 0), "old.py": Totals(1, 4, 2, 2, 0)}
    head = {"a.py": Totals(1, 2, 2, 0, 0), "new.py": Totals(1, 1, 1, 0, 0)}
    rows = file_changes(base, head)
    assert {p: (r["status"], r["change"]) for p, r in rows.items()} == {
        "a.py": ("changed", 50.0),
        "old.py": ("removed", -50.0),
        "new.py": ("added", 100.0),
    }
    assert [rows[p]["misses_change"] for p in ("a.py", "old.py", "new.py")] == [-1, -2, 0]


def test_without_a_base_there_is_no_change_and_no_file_moved() -> None:
    result = compare_totals(None, {"a.py": Totals(1, 2, 1, 1, 0)})
    assert result["base"] is None and result["change"] is None
    assert (result["files_changed"], result["top_files"]) == (0, [])
    assert result["head"] == Totals(1, 2, 1, 1, 0).to_dict()
