"""The comparison: totals, patch coverage on real diffs, indirect changes, flags."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from app.coverage import Branches, FileCoverage, Report, Totals, parse_report
from app.coverage.columnar import Part
from app.pullrequests.compare import compare, subset
from app.pullrequests.comparison import FlagInput
from app.pullrequests.diff import Diff, parse_unified_diff
from tests.app.pullrequests.test_diff import commit, git, repo, write  # noqa: F401


def part(
    files: dict[str, dict[int, int]], branches: dict[str, dict[int, Branches]] | None = None
) -> Part:
    branches = branches or {}
    return Part.from_report(
        Report(
            {p: FileCoverage(dict(lines), dict(branches.get(p, {}))) for p, lines in files.items()}
        )
    )


def test_totals_and_change_without_a_diff() -> None:
    base = part({"a.py": {1: 1, 2: 0, 3: 1, 4: 1}})
    head = part({"a.py": {1: 1, 2: 1, 3: 1, 4: 1}, "b.py": {1: 0}})
    result = compare(head, base, None, head_sha="h" * 40, base_sha="b" * 40)
    assert result.base == Totals(1, 4, 3, 1, 0)
    assert result.head == Totals(2, 5, 4, 1, 0)
    assert result.change == pytest.approx(80.0 - 75.0)
    assert result.patch is None and result.patch_coverage is None
    assert set(result.files) == {"a.py", "b.py"}
    assert result.files["b.py"].base is None
    assert result.indirect_changes() == []  # without a diff nothing is "indirect"


def test_no_base_gives_no_change() -> None:
    head = part({"a.py": {1: 1}})
    result = compare(head, None, None, head_sha="h", base_sha=None)
    assert result.base is None and result.change is None
    assert result.to_json()["top_files"] == [] and result.to_json()["base"] is None


def test_patch_counts_only_added_lines_with_coverage_and_partials_as_uncovered() -> None:
    diff = parse_unified_diff(
        "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n"
        "@@ -1,2 +1,6 @@\n x\n+n2\n+n3\n+n4\n+n5\n x\n"
    )
    partial = Branches(1, 2)
    head = part({"a.py": {1: 1, 2: 1, 3: 0, 4: 3, 6: 1}}, {"a.py": {4: partial}})
    base = part({"a.py": {1: 1, 2: 1}})
    result = compare(head, base, diff, head_sha="h", base_sha="b")
    # added 2..5: 2 hit, 3 miss, 4 partial, 5 has no coverage entry (not coverable)
    # the partial line 4 is the patch's one branch line (Codecov's diff totals' b)
    assert result.patch == Totals(1, 3, 1, 1, 1, branches=1)
    assert result.head.branches == 1 and result.base is not None and result.base.branches == 0
    assert result.patch_coverage == pytest.approx(100 / 3, abs=1e-4)
    fc = result.files["a.py"]
    assert (fc.patch_misses, fc.patch_partials) == ((3,), (4,))
    assert result.files_with_missing_lines() == [fc]
    # base line 2 moved to head line 6 and kept its state: no indirect change
    assert fc.indirect_lines == 0


def test_a_diff_that_adds_no_coverable_line_is_not_affected() -> None:
    diff = parse_unified_diff("--- a/README\n+++ b/README\n@@ -1 +1,2 @@\n x\n+y\n")
    head = part({"a.py": {1: 1}})
    result = compare(head, head, diff, head_sha="h", base_sha="b")
    assert result.patch == Totals() and result.patch_coverage is None
    assert not result.has_changes()


def test_indirect_changes_follow_the_shift_and_renames() -> None:
    diff = parse_unified_diff(
        "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1,0 +2,2 @@\n+n\n+n\n"
        "diff --git a/old.py b/new.py\nsimilarity index 100%\n"
        "rename from old.py\nrename to new.py\n"
    )
    base = part(
        {
            "a.py": {1: 1, 2: 1, 3: 0},
            "old.py": {1: 1, 2: 1},
            "untouched.py": {1: 1, 2: 0},
            "stable.py": {1: 5},
        }
    )
    head = part(
        {
            # base 2 -> head 4 still hit; base 3 -> head 5 now hit (indirect)
            "a.py": {1: 1, 2: 1, 3: 1, 4: 1, 5: 1},
            "new.py": {1: 1, 2: 0},  # renamed, line 2 lost its hit (indirect)
            "untouched.py": {1: 1, 2: 1},  # not in the diff, line 2 now hit
            "stable.py": {1: 9},  # more hits, same state: no change
        }
    )
    result = compare(head, base, diff, head_sha="h", base_sha="b")
    assert result.files["a.py"].indirect_lines == 1
    assert result.files["new.py"].base_path == "old.py"
    assert result.files["new.py"].indirect_lines == 1
    assert result.files["untouched.py"].indirect_lines == 1
    assert "stable.py" not in result.files and "old.py" not in result.files
    assert [f.path for f in result.indirect_changes()] == ["a.py", "new.py", "untouched.py"]
    assert result.has_changes()


def test_files_the_provider_omitted_are_reported_not_measured() -> None:
    diff = Diff(omitted=["big.py"])
    head = part({"big.py": {1: 0, 2: 0}})
    base = part({"big.py": {1: 1}})
    result = compare(head, base, diff, head_sha="h", base_sha="b")
    assert result.not_measured == ["big.py"]
    assert result.files["big.py"].indirect_lines == 0  # unknown, not guessed
    assert result.to_json()["not_measured"] == ["big.py"]


def test_flags_have_head_base_change_patch_and_carried_forward() -> None:
    diff = parse_unified_diff("--- /dev/null\n+++ b/n.py\n@@ -0,0 +1,2 @@\n+a\n+b\n")
    unit_head = part({"n.py": {1: 1, 2: 0}, "a.py": {1: 1}})
    unit_base = part({"a.py": {1: 0}})
    ui = part({"ui.js": {1: 1}})
    head = part({"n.py": {1: 1, 2: 0}, "a.py": {1: 1}, "ui.js": {1: 1}})
    base = part({"a.py": {1: 0}, "ui.js": {1: 1}})
    result = compare(
        head,
        base,
        diff,
        head_sha="h",
        base_sha="b",
        head_flags={"unit": FlagInput(unit_head), "ui": FlagInput(ui, carried_from="c" * 40)},
        base_flags={"unit": FlagInput(unit_base), "ui": FlagInput(ui), "gone": FlagInput(ui)},
    )
    unit = result.flags["unit"]
    assert (unit.head, unit.base, unit.patch) == (
        Totals(2, 3, 2, 1, 0),
        Totals(1, 1, 0, 1, 0),
        Totals(1, 2, 1, 1, 0),
    )
    assert unit.change == pytest.approx(200 / 3, abs=1e-4)
    assert result.flags["ui"].carried_forward and result.flags["ui"].carried_from == "c" * 40
    assert result.flags["gone"].head is None
    flags_json = result.to_json()["flags"]
    assert flags_json["ui"]["carried_from"] == "c" * 40 and flags_json["unit"]["patch"] == 50.0


def test_a_subset_restricts_to_paths_and_to_flags() -> None:
    head = part({"src/a.py": {1: 1, 2: 1}, "docs/x.py": {1: 0}})
    base = part({"src/a.py": {1: 1, 2: 0}, "docs/x.py": {1: 0}})
    unit = part({"src/a.py": {1: 1, 2: 1}})
    result = compare(
        head,
        base,
        None,
        head_sha="h",
        base_sha="b",
        head_flags={"unit": FlagInput(unit)},
        base_flags={},
    )
    src = subset(result, paths=("src/",))
    assert (src.head, src.base) == (Totals(1, 2, 2, 0, 0), Totals(1, 2, 1, 1, 0))
    only_unit = subset(result, flags=["unit"])
    assert only_unit.head == Totals(1, 2, 2, 0, 0) and only_unit.base == Totals()


# -- a real project: coverage.py on two commits and their real git diff --------

APP_BASE = """\
def grade(score):
    if score >= 90:
        return "A"
    return "B"


def unused():
    return 1
"""

APP_HEAD = """\
def grade(score):
    if score >= 90:
        return "A"
    if score >= 80:
        return "B"
    if score >= 70:
        return "C"
    return "F"


def unused():
    return 1


def added_and_untested(x):
    return x * 2
"""

TEST = """\
from app import grade

assert grade(95) == "A"
assert grade(85) in ("B",)
"""


def run_coverage(project: Path) -> Report:
    subprocess.run(
        [sys.executable, "-m", "coverage", "run", "--branch", "test_app.py"],
        cwd=project,
        check=True,
        capture_output=True,
    )
    subprocess.run(
        [sys.executable, "-m", "coverage", "xml", "-o", "coverage.xml", "--include", "app.py"],
        cwd=project,
        check=True,
        capture_output=True,
    )
    subprocess.run(
        [sys.executable, "-m", "coverage", "json", "-o", "coverage.json", "--include", "app.py"],
        cwd=project,
        check=True,
        capture_output=True,
    )
    return parse_report((project / "coverage.xml").read_bytes())


def test_patch_coverage_of_a_real_change_equals_coverage_pys_view_of_the_added_lines(
    repo: Path,  # noqa: F811
) -> None:
    (repo / ".gitignore").write_text(".coverage\ncoverage.*\n__pycache__/\n")
    (repo / "app.py").write_text(APP_BASE)
    (repo / "test_app.py").write_text(TEST.replace('in ("B",)', '== "B"'))
    base_sha = commit(repo)
    base_report = run_coverage(repo)
    (repo / "app.py").write_text(APP_HEAD)
    (repo / "test_app.py").write_text(TEST)
    head_sha = commit(repo)
    head_report = run_coverage(repo)
    measured = json.loads((repo / "coverage.json").read_text())["files"]["app.py"]

    diff = parse_unified_diff(git(repo, "diff", base_sha, head_sha))
    result = compare(
        Part.from_report(head_report),
        Part.from_report(base_report),
        diff,
        head_sha=head_sha,
        base_sha=base_sha,
    )

    added = set(diff.files["app.py"].added)
    executed = set(measured["executed_lines"]) & added
    missing = set(measured["missing_lines"]) & added
    partial = {
        ln for ln in executed if any(a == ln for a, _ in measured.get("missing_branches", []))
    }
    assert result.patch is not None
    # the change adds a partial (line 4), misses (6, 7, 8, 16) and hits
    assert result.patch.partials >= 1 and result.patch.misses >= 4 and result.patch.hits >= 1
    assert result.patch.lines == len(executed) + len(missing)
    assert result.patch.misses == len(missing)
    assert result.patch.partials == len(partial)
    assert result.patch.hits == len(executed - partial)
    assert set(result.files["app.py"].patch_misses) == missing
    assert result.head == head_report.totals() and result.base == base_report.totals()


def test_fixes_rewrite_report_paths_and_ignore_leaves_files_out_on_both_sides() -> None:
    from app.pullrequests.config import parse_codecov_yaml

    config = parse_codecov_yaml('fixes:\n  - "/ci/build/::"\nignore:\n  - "gen/**"\n')
    head = part({"/ci/build/src/a.py": {1: 1, 2: 0}, "gen/x.py": {1: 0}, "src/a.py": {3: 1}})
    base = part({"src/a.py": {1: 1}, "gen/x.py": {1: 1}})
    diff = parse_unified_diff(
        "--- a/src/a.py\n+++ b/src/a.py\n@@ -1,0 +2,2 @@\n+x\n+y\n"
        "--- a/gen/x.py\n+++ b/gen/x.py\n@@ -1,0 +2 @@\n+z\n"
    )
    result = compare(head, base, diff, head_sha="h", base_sha="b", config=config)
    # /ci/build/src/a.py and src/a.py are one file after the fix; gen/ is ignored
    assert set(result.files) == {"src/a.py"}
    assert result.head == Totals(1, 3, 2, 1, 0) and result.base == Totals(1, 1, 1, 0, 0)
    assert result.patch == Totals(1, 2, 1, 1, 0)
    assert subset(result, paths=("src/",)).head == result.head
