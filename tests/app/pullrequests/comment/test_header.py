"""The comment's header lines: patch, project, not measured, no base."""

from __future__ import annotations

from markdown_it import MarkdownIt

from app.pullrequests.comment import (
    PullInfo,
)
from app.pullrequests.diff import parse_unified_diff
from tests.support.pullcomment import (
    comment,
    compared,
    rendered,
    report,
)


def test_no_base_asks_for_an_upload_of_it() -> None:
    head = report({"a.py": (1, 1)})
    comparison = compared(head, None)
    body = comment(comparison, PullInfo(3, "main", base_sha="1234567" + "0" * 33))
    assert (
        ":warning: Please [upload](https://docs.codecov.com/docs/codecov-uploader) report for BASE "
        "(`main@1234567`)." in body
    )
    assert "  Coverage      ?   50.00%" in body
    without_sha = comment(comparison, PullInfo(3, "main"))
    assert "report for BASE (`main`)." in without_sha


def test_files_the_provider_gave_no_patch_for_are_named_as_not_measured() -> None:
    head = report({"src/a.py": (1, 1)})
    diff = parse_unified_diff("--- a/src/a.py\n+++ b/src/a.py\n@@ -1,0 +2,1 @@\n+x\n")
    diff.omitted = ["assets/[x](https://evil.example)@admin`.json"] + [
        f"data/big{i:02}.csv" for i in range(11)
    ]
    body = comment(compared(head, head, diff), PullInfo(7, "main"))
    (line,) = [line for line in body.splitlines() if "not measured" in line]
    assert line.startswith(":warning: 12 files of the diff not measured")
    assert "`data/big00.csv`" in line and "`data/big08.csv`" in line
    assert "big09" not in line and line.endswith(" and 2 more.")
    html = MarkdownIt("commonmark").render(body)
    assert 'href="https://evil' not in html  # a path stays inside its code span
    assert "cut short" not in body

    diff.truncated = True
    diff.omitted = []
    truncated = comment(compared(head, head, diff), PullInfo(7, "main"))
    assert (
        ":warning: The provider's file list of the diff was cut short at its limit: "
        "files past it are not measured." in truncated.splitlines()
    )


def test_a_diff_measured_whole_says_nothing_about_unmeasured_files() -> None:
    assert "not measured" not in rendered()
