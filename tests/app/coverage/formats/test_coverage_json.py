"""coverage.py JSON: executed and missing lines, arcs as branches, and the limits."""

from __future__ import annotations

import pytest

from app.coverage import Branches, parse_report

pytestmark = pytest.mark.timeout(20)


def test_coverage_json_arcs_become_branches_of_their_source_line() -> None:
    raw = b"""{"meta": {"format": 3, "branch_coverage": true}, "files": {"m.py": {
      "executed_lines": [1, 2, 4], "missing_lines": [3],
      "executed_branches": [[2, 4], [-1, 1]], "missing_branches": [[2, 3], [4, -1]]}}}"""
    fc = parse_report(raw).files["m.py"]
    assert fc.lines == {1: 1, 2: 1, 3: 0, 4: 1}
    assert fc.branches[2] == Branches.from_ids(frozenset({"arc:4"}), frozenset({"arc:4", "arc:3"}))
    assert (fc.branches[4].covered, fc.branches[4].total) == (0, 1)
    assert parse_report(raw).totals().partials == 2


def test_a_line_listed_as_executed_and_missing_ran_and_line_zero_is_dropped() -> None:
    """coverage.py records whether a line ran, so a line is 1 hit or 0; its
    shards are combined before writing, so ``executed`` is the stronger claim."""
    raw = b"""{"meta": {"format": 2}, "files": {"m.py": {
      "executed_lines": [0, 2, 5], "missing_lines": [2, 3]}, "n.py": {}}}"""
    report = parse_report(raw)
    assert report.files["m.py"].lines == {2: 1, 3: 0, 5: 1}
    assert report.files["n.py"].lines == {}
