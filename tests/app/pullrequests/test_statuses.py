"""Commit statuses: Codecov's states and descriptions, word for word."""

from __future__ import annotations

from app.coverage import FileCoverage, Report
from app.coverage.columnar import Part
from app.pullrequests.compare import compare
from app.pullrequests.comparison import FlagInput
from app.pullrequests.config import parse_codecov_yaml
from app.pullrequests.diff import parse_unified_diff
from app.pullrequests.statuses import (
    MAX_STATUSES,
    CommitStatus,
    commit_statuses,
    pending_statuses,
    too_many_statuses,
)

BASE_SHA = "b11ecec" + "0" * 33
HEAD_SHA = "dd78d54" + "1" * 33


def lines(hit: int, total: int, start: int = 1) -> dict[int, int]:
    return {start + i: (1 if i < hit else 0) for i in range(total)}


def part(**files: dict[int, int]) -> Part:
    return Part.from_report(
        Report({name.replace("_", "/") + ".py": FileCoverage(ln) for name, ln in files.items()})
    )


def added_lines(path: str, first: int, count: int) -> str:
    body = "".join("+x\n" for _ in range(count))
    return f"--- a/{path}\n+++ b/{path}\n@@ -{first - 1},0 +{first},{count} @@\n{body}"


def test_project_and_patch_descriptions_as_codecov_writes_them() -> None:
    # base 83.34%; head 7440/10018 = 74.26632% (-9.07368 points); 11 of 18 added lines hit
    base = part(src_a=lines(8334, 10000))
    head_lines = lines(7429, 10000)
    head_lines.update({10000 + i: (1 if i <= 11 else 0) for i in range(1, 19)})
    head = part(src_a=head_lines)
    diff = parse_unified_diff(added_lines("src/a.py", 10001, 18))
    comparison = compare(head, base, diff, head_sha=HEAD_SHA, base_sha=BASE_SHA)
    config = parse_codecov_yaml("coverage:\n  round: nearest\n")
    statuses = commit_statuses(config, comparison, is_pull=True)
    assert commit_statuses(parse_codecov_yaml(None), comparison, is_pull=True)[0].description == (
        "74.26% (-9.08%) compared to b11ecec"  # round: down floors both
    )
    assert statuses == [
        CommitStatus("codecov/project", "failure", "74.27% (-9.07%) compared to b11ecec"),
        CommitStatus("codecov/patch", "failure", "61.11% of diff hit (target 83.34%)"),
    ]


def test_the_exact_examples_of_the_reference() -> None:
    base = part(src_a=lines(8334, 10000))
    head = part(src_a=lines(7429, 10000))
    comparison = compare(head, base, None, head_sha=HEAD_SHA, base_sha=BASE_SHA)
    config = parse_codecov_yaml(None)
    project, _ = commit_statuses(config, comparison, is_pull=True)
    assert project.description == "74.29% (-9.05%) compared to b11ecec"
    assert project.state == "failure"
    # 11 of 18 added lines hit against a base of 74.29%
    base = part(src_a=lines(7429, 10000))
    head_lines = lines(7429, 10000)
    head_lines.update({10000 + i: (1 if i <= 11 else 0) for i in range(1, 19)})
    diff = parse_unified_diff(added_lines("src/a.py", 10001, 18))
    comparison = compare(part(src_a=head_lines), base, diff, head_sha=HEAD_SHA, base_sha=BASE_SHA)
    _, patch = commit_statuses(config, comparison, is_pull=True)
    assert patch == CommitStatus("codecov/patch", "failure", "61.11% of diff hit (target 74.29%)")
    # a diff that adds no coverable line
    readme = parse_unified_diff(added_lines("README.md", 1, 2))
    comparison = compare(base, base, readme, head_sha=HEAD_SHA, base_sha=BASE_SHA)
    project, patch = commit_statuses(config, comparison, is_pull=True)
    assert project == CommitStatus(
        "codecov/project", "success", "74.29% (+0.00%) compared to b11ecec"
    )
    assert patch == CommitStatus(
        "codecov/patch", "success", "Coverage not affected when comparing b11ecec...dd78d54"
    )


def test_fixed_targets_thresholds_and_informational() -> None:
    base = part(src_a=lines(90, 100))
    head_lines = lines(86, 100)
    head_lines.update({100 + i: (1 if i <= 9 else 0) for i in range(1, 11)})  # patch 90%
    diff = parse_unified_diff(added_lines("src/a.py", 101, 10))
    comparison = compare(part(src_a=head_lines), base, diff, head_sha=HEAD_SHA, base_sha=BASE_SHA)
    config = parse_codecov_yaml(
        """
coverage:
  status:
    project:
      default:
        target: 87%
      soft:
        target: 87%
        threshold: 1
      info:
        informational: true
    patch:
      default:
        target: 91
        threshold: 1.5
      strict:
        target: 95
"""
    )
    got = {
        s.context: (s.state, s.description)
        for s in commit_statuses(config, comparison, is_pull=True)
    }
    assert got == {
        "codecov/project": ("failure", "86.36% (target 87.00%)"),
        "codecov/project/soft": ("success", "86.36% (target 87.00%)"),
        "codecov/project/info": ("success", "86.36% (-3.64%) compared to b11ecec"),
        "codecov/patch": ("success", "90.00% of diff hit (within 1.50% threshold of 91.00%)"),
        "codecov/patch/strict": ("failure", "90.00% of diff hit (target 95.00%)"),
    }


def test_without_a_base_if_not_found_decides_and_ignore_sends_nothing() -> None:
    head = part(src_a=lines(5, 10))
    comparison = compare(
        head,
        None,
        parse_unified_diff(added_lines("src/a.py", 1, 10)),
        head_sha=HEAD_SHA,
        base_sha=None,
    )
    config = parse_codecov_yaml(
        "coverage:\n  status:\n    project:\n      default:\n        if_not_found: failure\n"
        "    patch:\n      default:\n        if_not_found: ignore\n"
    )
    assert commit_statuses(config, comparison, is_pull=True) == [
        CommitStatus("codecov/project", "failure", "No report found to compare against")
    ]


def test_removed_code_explains_a_drop_with_adjust_base() -> None:
    # base: 10 lines, lines 1-5 hit, 6-10 miss ... head removes hit lines 1-3
    base = part(src_a={**{i: 1 for i in range(1, 6)}, **{i: 0 for i in range(6, 11)}})
    head = part(src_a={**{i: 1 for i in range(1, 3)}, **{i: 0 for i in range(3, 8)}})
    diff = parse_unified_diff("--- a/src/a.py\n+++ b/src/a.py\n@@ -1,3 +0,0 @@\n-a\n-b\n-c\n")
    comparison = compare(head, base, diff, head_sha=HEAD_SHA, base_sha=BASE_SHA)
    (project, _) = commit_statuses(parse_codecov_yaml(None), comparison, is_pull=True)
    # head 2/7 = 28.57% < base 50%; adjusted base 2/7 = 28.57%: passes
    assert project == CommitStatus(
        "codecov/project",
        "success",
        "28.57% (-21.43%) compared to b11ecec, passed because coverage increased by 0% "
        "when compared to adjusted base (28.57%)",
    )


def test_the_adjusted_base_message_shows_a_rise_without_a_sign_as_codecov_does() -> None:
    # base: 10 lines, 1-5 hit; the diff removes hit lines 1-4: head 1/5 = 20% <
    # base 50%; adjusted base (5 - 4 hits of 10 - 4 lines) 16.66667%, 3.33 below.
    base = part(src_a={**{i: 1 for i in range(1, 6)}, **{i: 0 for i in range(6, 11)}})
    head = part(src_a={1: 1, 2: 0, 3: 0, 4: 0, 5: 0})
    diff = parse_unified_diff("--- a/src/a.py\n+++ b/src/a.py\n@@ -1,4 +0,0 @@\n-a\n-b\n-c\n-d\n")
    comparison = compare(head, base, diff, head_sha=HEAD_SHA, base_sha=BASE_SHA)
    (project, _) = commit_statuses(parse_codecov_yaml(None), comparison, is_pull=True)
    assert project.state == "success"
    assert project.description.endswith(
        ", passed because coverage increased by 3.33% when compared to adjusted base (16.66%)"
    )


def test_the_adjusted_base_passes_within_half_a_hundredth_below_the_head_as_codecov() -> None:
    # adjusted base 2/7 = 28.57143%, head 1999/7000 = 28.55714%: 0.0143 points below
    # fails Codecov's rule (adjusted - head < 0.005); head 19999/70000 = 28.57000%
    # (0.00143 below) passes it and shows "increased by 0%".
    removed_hits = {i: 1 for i in range(1, 4)}
    base = part(src_a={**removed_hits, **lines(2, 7, start=4)})
    head = part(src_a=lines(19999, 70000))
    diff = parse_unified_diff("--- a/src/a.py\n+++ b/src/a.py\n@@ -1,3 +0,0 @@\n-a\n-b\n-c\n")
    comparison = compare(head, base, diff, head_sha=HEAD_SHA, base_sha=BASE_SHA)
    (project, _) = commit_statuses(parse_codecov_yaml(None), comparison, is_pull=True)
    assert project.state == "success"
    assert project.description.endswith("increased by 0% when compared to adjusted base (28.57%)")


def test_only_pulls_flag_and_path_filters_and_pending() -> None:
    base = part(src_a=lines(1, 2), docs_b=lines(0, 2))
    head = part(src_a=lines(2, 2), docs_b=lines(0, 2))
    unit = part(src_a=lines(2, 2))
    comparison = compare(
        head,
        base,
        None,
        head_sha=HEAD_SHA,
        base_sha=BASE_SHA,
        head_flags={"unit": FlagInput(unit)},
        base_flags={"unit": FlagInput(part(src_a=lines(1, 2)))},
    )
    config = parse_codecov_yaml(
        """
coverage:
  status:
    project:
      default: false
      src:
        paths: [src/]
      unit:
        flags: [unit]
        only_pulls: true
    patch: false
flag_management:
  individual_flags:
    - name: unit
      statuses:
        - type: project
          name_prefix: flag-
          target: 99
"""
    )
    off_pull = commit_statuses(config, comparison, is_pull=False)
    assert off_pull == [
        CommitStatus("codecov/project/src", "success", "100.00% (+50.00%) compared to b11ecec"),
        CommitStatus("codecov/project/flag-unit", "success", "100.00% (target 99.00%)"),
    ]
    on_pull = {s.context: s.description for s in commit_statuses(config, comparison, is_pull=True)}
    assert on_pull == {
        "codecov/project/src": "100.00% (+50.00%) compared to b11ecec",
        "codecov/project/unit": "100.00% (+50.00%) compared to b11ecec",
        "codecov/project/flag-unit": "100.00% (target 99.00%)",
    }
    assert [s.context for s in pending_statuses(config, is_pull=False, flags=["unit"])] == [
        "codecov/project/src",
        "codecov/project/flag-unit",
    ]
    assert {s.description for s in pending_statuses(config, is_pull=True)} == {
        "Collecting reports and waiting for CI to complete"
    }


def test_a_status_that_may_be_ignored_is_never_pending() -> None:
    config = parse_codecov_yaml(
        """
coverage:
  status:
    project:
      default:
        if_not_found: ignore
      strict:
        if_not_found: failure
    patch:
      default:
        only_pulls: true
"""
    )
    assert [s.context for s in pending_statuses(config, is_pull=True)] == [
        "codecov/project/strict",
        "codecov/patch",
    ]
    assert [s.context for s in pending_statuses(config, is_pull=False)] == [
        "codecov/project/strict"
    ]


FLAG_BUILDS = """
flag_management:
  default_rules:
    statuses:
      - type: project
        name_prefix: flag-
  individual_flags:
    - name: unit
      after_n_builds: 2
flags:
  e2e:
    after_n_builds: 3
coverage:
  status:
    project:
      default: false
      both:
        flags: [unit, e2e]
    patch: false
"""


def test_a_status_filtered_to_flags_waits_for_each_flags_after_n_builds() -> None:
    unit, e2e = part(src_a=lines(2, 2)), part(src_b=lines(1, 2))
    comparison = compare(
        part(src_a=lines(2, 2), src_b=lines(1, 2)),
        None,
        None,
        head_sha=HEAD_SHA,
        base_sha=None,
        head_flags={"unit": FlagInput(unit), "e2e": FlagInput(e2e)},
    )
    config = parse_codecov_yaml(FLAG_BUILDS)

    def sent(builds: dict[str, int] | None) -> list[str]:
        return [
            s.context for s in commit_statuses(config, comparison, is_pull=True, flag_builds=builds)
        ]

    assert sent({"unit": 1, "e2e": 3}) == []  # a flag-unit status and "both" wait for unit
    assert sent({"unit": 2, "e2e": 2}) == ["codecov/project/flag-unit"]
    assert sent({"unit": 2, "e2e": 3}) == ["codecov/project/both", "codecov/project/flag-unit"]
    # The head has no upload at all: Codecov does not hold the statuses back.
    assert sent(None) == ["codecov/project/both", "codecov/project/flag-unit"]


def test_a_failed_ci_gives_each_status_its_if_ci_failed() -> None:
    head = part(src_a=lines(5, 10))
    comparison = compare(head, head, None, head_sha=HEAD_SHA, base_sha=BASE_SHA)
    config = parse_codecov_yaml(
        "coverage:\n  status:\n    project:\n      default:\n        informational: true\n"
        "    patch:\n      default:\n        if_ci_failed: failure\n"
    )
    assert commit_statuses(config, comparison, is_pull=True, ci_failed=True) == [
        CommitStatus("codecov/project", "success", "CI failed."),
        CommitStatus("codecov/patch", "failure", "CI failed."),
    ]
    assert commit_statuses(parse_codecov_yaml(None), comparison, is_pull=True, ci_failed=True)[
        0
    ] == CommitStatus("codecov/project", "error", "CI failed.")


def flags_with_a_status_each(flags: int) -> str:
    rows = "".join(f"    - name: f{i:03d}\n" for i in range(flags))
    return (
        "flag_management:\n  default_rules:\n    statuses:\n"
        "      - type: project\n        name_prefix: flag-\n"
        "  individual_flags:\n" + rows
    )


def test_a_commit_gets_at_most_fifty_statuses_and_more_is_a_config_error() -> None:
    comparison = compare(part(src_a=lines(2, 2)), None, None, head_sha=HEAD_SHA, base_sha=None)
    within = parse_codecov_yaml(flags_with_a_status_each(MAX_STATUSES - 2))
    over = parse_codecov_yaml(flags_with_a_status_each(500))

    assert len(commit_statuses(within, comparison, is_pull=True)) == MAX_STATUSES == 50
    assert too_many_statuses(within) is None
    sent = commit_statuses(over, comparison, is_pull=True)
    pending = pending_statuses(over, is_pull=True)
    assert len(sent) == len(pending) == 50
    assert [s.context for s in sent[:3]] == [
        "codecov/project",
        "codecov/patch",
        "codecov/project/flag-f000",
    ]
    assert sent[-1].context == "codecov/project/flag-f047"
    error = too_many_statuses(over)
    assert error is not None and error.key == "coverage.status"
    assert "asks for 502 statuses" in error.message and "at most 50" in error.message
    # Flags present in the upload count too (the default rules give them a status).
    present = [f"up{i:03d}" for i in range(60)]
    assert too_many_statuses(parse_codecov_yaml(flags_with_a_status_each(0)), present)
