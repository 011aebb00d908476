"""``compare``: the change of a commit against its base, a pure function."""

from __future__ import annotations

import pytest

from app.coverage import Branches, FileCoverage, Report
from app.web.compare import compare


def report(files: dict[str, dict[int, int]]) -> Report:
    return Report({path: FileCoverage(dict(lines)) for path, lines in files.items()})


def test_the_total_change_is_head_coverage_minus_base_coverage() -> None:
    base = report({"a.py": {1: 1, 2: 0}})
    head = report({"a.py": {1: 1, 2: 1}})
    result = compare(base, head)
    assert result["change"] == pytest.approx(50.0)
    assert result["base"]["coverage"] == 50.0 and result["head"]["coverage"] == 100.0


def test_files_that_moved_most_come_first_and_unchanged_ones_are_left_out() -> None:
    base = report({"a.py": {1: 1, 2: 0}, "b.py": {1: 0, 2: 0, 3: 0, 4: 1}, "c.py": {1: 1}})
    head = report({"a.py": {1: 1, 2: 1}, "b.py": {1: 0, 2: 0, 3: 1, 4: 1}, "c.py": {1: 1}})
    result = compare(base, head, top=5)
    assert [f["path"] for f in result["top_files"]] == ["a.py", "b.py"]
    assert result["files_changed"] == 2
    assert result["top_files"][1]["misses_change"] == -1


def test_added_and_removed_files_are_named_as_such() -> None:
    base = report({"old.py": {1: 1, 2: 0}})
    head = report({"new.py": {1: 1}})
    by_path = {f["path"]: f for f in compare(base, head)["top_files"]}
    assert by_path["new.py"]["status"] == "added" and by_path["new.py"]["change"] == 100.0
    assert by_path["old.py"]["status"] == "removed" and by_path["old.py"]["change"] == -50.0


def test_without_a_base_there_is_no_change() -> None:
    head = report({"a.py": {1: 1}})
    result = compare(None, head)
    assert result["base"] is None and result["change"] is None and result["top_files"] == []


def test_a_partial_line_counts_against_coverage_as_codecov_counts_it() -> None:
    base = report({"a.py": {1: 1}})
    head = Report({"a.py": FileCoverage({1: 1}, {1: Branches(1, 2)})})
    assert compare(base, head)["change"] == pytest.approx(-100.0)
