"""The comment in Codecov's layouts, checked against Codecov's own comments."""

from __future__ import annotations

import re
from dataclasses import replace

from markdown_it import MarkdownIt

from app.coverage import FileCoverage, Report
from app.coverage.columnar import Part
from app.coverage.model import Branches
from app.pullrequests.comment import (
    CommentLinks,
    PullInfo,
    escape_markdown,
    message_layout,
    render_comment,
)
from app.pullrequests.compare import compare
from app.pullrequests.comparison import Comparison, FlagInput
from app.pullrequests.config import parse_codecov_yaml
from app.pullrequests.diff import parse_unified_diff
from tests.support.markdown import render_html, visible_lines
from tests.support.pullcomment import (
    BASE,
    HEAD,
    LINKS,
    OLD_LAYOUT,
    PAGE,
    comment,
    compared,
    rendered,
    report,
)


def test_the_older_full_layout_reads_as_codecovs_with_its_current_header() -> None:
    body = rendered(OLD_LAYOUT)
    lines = body.splitlines()
    assert lines[0] == f"## [Codecov]({PAGE}) Report"
    assert lines[2] == (
        ":x: Patch coverage is `66.66%` with `2 lines` in your changes missing "
        "coverage. Please review."
    )
    assert lines[3] == (
        ":white_check_mark: Project coverage is 76.92%. Comparing base "
        f"([`d28caa2`](https://cov.example/gh/o/r/commit/{BASE})) to head "
        f"([`abc0f94`](https://cov.example/gh/o/r/commit/{HEAD}))."
    )
    assert "<details>" not in body
    a_link = f"[src/a.py]({LINKS.file_url('src/a.py')}#diff-c3JjL2EucHk=)"
    assert f"| {a_link} | 66.66% | [2 Missing :warning: ]({LINKS.file_url('src/a.py')}) |" in lines
    assert "```diff" in lines and "+ Coverage   70.00%   76.92%   +6.92%" in [
        line.rstrip() for line in lines
    ]
    flags = lines.index(f"| [Flag]({LINKS.flags_url}) | Coverage \u0394 | |")
    assert lines[flags + 1] == "|---|---|---|"
    # unit: 13/16 = 81.25% against 90.00% (-8.75), patch 4/6; ui carried: hidden; old: gone
    assert lines[flags + 2] == f"| [old]({LINKS.flags_url}) | `?` | |"
    assert lines[flags + 3] == (
        f"| [unit]({LINKS.flags_url}) | `81.25% <66.66%> (-8.75%)` | :arrow_down: |"
    )
    assert "ui" not in body.split("Flags with carried")[0].split("| [Flag]")[1]
    assert (
        "Flags with carried forward coverage won't be shown. [Click here]"
        "(https://docs.codecov.io/docs/carryforward-flags#carryforward-flags-in-the-pull-request-"
        "comment) to find out more." in lines
    )
    files = lines.index(f"| [Files with missing lines]({PAGE}#diff-files) | Coverage \u0394 | |")
    assert lines[files + 2] == f"| {a_link} | `81.25% <66.66%> (-8.75%)` | :arrow_down: |"
    # b.py changed outside the diff: an indirect change
    assert f"... and [1 file with indirect coverage changes]({LINKS.indirect_url})" in lines
    assert (
        "> `\u0394 = absolute <relative> (impact)`, `\xf8 = not affected`, `? = missing data`"
        in lines
    )
    assert f"[Continue to review the full report in covworker]({PAGE})." in lines
    assert any(line.startswith(f"> Last update [d28caa2...abc0f94]({PAGE}).") for line in lines)
    missing = f"| [Files with missing lines]({PAGE}#diff-files) | Patch % | Lines |"
    assert lines.index(missing) < lines.index("```diff")


def test_layout_picks_sections_and_extra_sections_come_before_the_footer() -> None:
    body = rendered("comment:\n  layout: header, footer\n", extra_sections=["### Tests\n3 failed"])
    assert "```diff" not in body and "| [Flag]" not in body and "Files with missing" not in body
    assert body.index("### Tests") < body.index("------")


def test_nothing_from_an_upload_can_inject_markdown_html_or_mentions() -> None:
    evil_path = "src/[x](https://evil.example)/<img src=x onerror=alert(1)>@admin|`.py"
    evil_flag = "ui](https://evil.example) @everyone <script>"
    head = Part.from_report(Report({evil_path: FileCoverage({1: 0, 2: 1})}))
    diff = parse_unified_diff(f"--- /dev/null\n+++ b/{evil_path}\n@@ -0,0 +1,2 @@\n+a\n+b\n")
    comparison = compared(
        head, Part.from_report(Report()), diff, head_flags={evil_flag: FlagInput(head)}
    )
    body = comment(comparison, PullInfo(1, "ma`in\n```\n[x](y)"))
    # rendered as CommonMark with tables: no element, link or image from the upload
    html = MarkdownIt("commonmark").enable("table").render(body)
    assert "<img" not in html and "<script" not in html
    assert 'href="https://evil' not in html and 'src="x"' not in html
    # no mention or autolink can form: "@" and "://" are followed by a zero-width space
    assert not re.search(r"@(admin|everyone)", body.replace("%3E@admin", ""))
    assert "https:/\u200b/evil" in body or "https://\u200bevil" in body
    # the branch name cannot close the fenced block
    assert body.count("```") == 2
    assert escape_markdown("a|b") == "a\\|b"


def test_codecovs_legacy_default_layout_renders_its_sections() -> None:
    body = rendered('comment:\n  layout: "reach,diff,flags,tree:1,reach"\n')
    assert "```diff" in body and "| [Flag]" in body
    assert body.count("Coverage \u0394 | |") == 2  # flags and files (tree) tables
    assert "Patch % | Lines" not in body  # ``tree:1`` is not ``tree``: no newfiles (Codecov)
    assert "------" not in body and ":umbrella:" not in body  # no footer in that layout
    assert ":white_check_mark: Project coverage is 76.92%" in body  # condensed_header put first
    assert body.index(":x: Patch coverage") < body.index("```diff")


REF_BASE = "42aa7cc" + "3" * 33

REF_HEAD = "b14d01b" + "4" * 33

TESTS_PASSED = ":white_check_mark: All tests successful. No failed tests found."

#: Codecov's comment on codecov/worker#755 as GitHub shows it (links and the
#: fold flattened to their text), up to its footer.
CODECOV_755 = [
    "Codecov Report",
    "\u2705 All modified and coverable lines are covered by tests.",
    "\u2705 Project coverage is 92.26%. Comparing base (42aa7cc) to head (b14d01b).",
    "\u2705 All tests successful. No failed tests found.",
    "Additional details and impacted files",
    "@@           Coverage Diff           @@",
    "##             main     #755   +/-   ##",
    "=======================================",
    "  Coverage   92.26%   92.26%",
    "=======================================",
    "  Files        1304     1304",
    "  Lines       47925    47942   +17",
    "  Branches     1628     1628",
    "=======================================",
    "+ Hits        44218    44236   +18",
    "+ Misses       3398     3397    -1",
    "  Partials      309      309",
    "Flag Coverage \u0394",
    "workerintegration 58.74% <80.95%> (+0.18%) \u2b06\ufe0f",
    "workerunit 90.39% <100.00%> (+0.01%) \u2b06\ufe0f",
    "Flags with carried forward coverage won't be shown. Click here to find out more.",
]

COVWORKER_FOOTER = [
    "\u2614 View full report in covworker.",
    "\U0001f4e2 Have feedback on the report? Share it with the people who run this covworker.",
]


def lines_of(hits: int, misses: int = 0, start: int = 1) -> dict[int, int]:
    return {start + i: (1 if i < hits else 0) for i in range(hits + misses)}


def worker_755() -> Comparison:
    """A comparison with the numbers of codecov/worker#755: 1304 files, 47925 ->
    47942 lines; the diff takes 4 lines out of w.py (3 hit, 1 missed) and adds
    21, all hit (17 of them by the integration tests); flags as in the comment,
    ``apiunit`` carried forward."""
    big = FileCoverage(lines_of(42_907, 3397))
    for n in range(42_907 + 3397 + 1, 46_614):  # 309 partials: hit, a branch missed
        big.lines[n] = 1
        big.branches[n] = Branches(1, 2)
    for n in range(1, 1320):  # the rest of the 1628 lines with branches, all taken
        big.branches[n] = Branches(2, 2)
    filler = {f"pkg/f{i:04}.py": FileCoverage({1: 1}) for i in range(1302)}
    base_w = FileCoverage({**lines_of(3), 4: 0, **lines_of(6, start=5)})
    head = Part.from_report(
        Report({**filler, "pkg/big.py": big, "w.py": FileCoverage(lines_of(27))})
    )
    base = Part.from_report(Report({**filler, "pkg/big.py": big, "w.py": base_w}))
    diff = parse_unified_diff(
        "--- a/w.py\n+++ b/w.py\n@@ -1,4 +1,21 @@\n" + "-x\n" * 4 + "+y\n" * 21
    )

    def flag(added: dict[int, int], other: str, hits: int, lines: int) -> FlagInput:
        own = FileCoverage(lines_of(hits, lines - hits))
        files = {"w.py": FileCoverage(added), other: own} if added else {other: own}
        return FlagInput(Part.from_report(Report(files)))

    comparison = compare(
        head,
        base,
        diff,
        head_sha=REF_HEAD,
        base_sha=REF_BASE,
        head_flags={
            "workerintegration": flag(lines_of(17, 4), "fi.py", 5857, 9979),
            "workerunit": flag(lines_of(21), "fu.py", 9018, 9979),
            "apiunit": FlagInput(report({"api.py": (3, 1)}), carried_from=REF_BASE),
        },
        base_flags={
            "workerintegration": flag({}, "fi.py", 5856, 10_001),  # 58.5541%
            "workerunit": flag({}, "fu.py", 9038, 10_000),
            "apiunit": FlagInput(report({"api.py": (3, 1)})),
        },
    )
    # The lines with branch information (Totals.branches), as counted for the base and head.
    assert comparison.base is not None
    comparison.head = replace(comparison.head, branches=1628)
    comparison.base = replace(comparison.base, branches=1628)
    return comparison


def test_codecovs_current_comment_on_a_pull_request_is_reproduced_line_for_line() -> None:
    comparison = worker_755()
    assert (comparison.head.lines, comparison.head.hits, comparison.head.misses) == (
        47942,
        44236,
        3397,
    )
    body = render_comment(
        comparison,
        parse_codecov_yaml(None),  # covworker's default layout
        pull=PullInfo(755, "main"),
        links=LINKS,
        extra_sections=[TESTS_PASSED],
    )
    assert visible_lines(body) == CODECOV_755 + COVWORKER_FOOTER
    # the fold is a real <details> holding the block and the flags, the footer outside
    html = render_html(body)
    fold, after = html.split("<details>")[1].split("</details>")
    assert "Coverage Diff" in fold and "workerunit" in fold and "View full report" in after
    assert "Project coverage" not in fold


def test_codecovs_current_comment_without_project_coverage_is_reproduced() -> None:
    body = render_comment(
        worker_755(),
        parse_codecov_yaml(
            "comment:\n"
            '  layout: "condensed_header, condensed_files, condensed_footer"\n'
            "  hide_project_coverage: true\n"
        ),
        pull=PullInfo(755, "main"),
        links=LINKS,
        extra_sections=[TESTS_PASSED],
    )
    # Codecov's: the header lines and "📢 Thoughts on this report? Let us know!"
    assert visible_lines(body) == [
        "Codecov Report",
        "\u2705 All modified and coverable lines are covered by tests.",
        "\u2705 All tests successful. No failed tests found.",
        "\U0001f4e2 Thoughts on this report? Share them with the people who run this covworker.",
    ]


def test_the_default_layout_puts_the_patch_table_above_the_fold_and_the_files_in_it() -> None:
    body = rendered()
    html = render_html(body)
    above, fold = html.split("<details>")[0], html.split("<details>")[1].split("</details>")[0]
    assert "Patch %" in above and "\u274c" not in above  # shortcodes stay as Codecov writes them
    assert ":x: Patch coverage is `66.66%` with `2 lines`" in body
    assert "Coverage Diff" in fold and "Flag" in fold and "indirect coverage changes" in fold
    assert "Patch %" not in fold and "Coverage \u0394" in fold
    assert body.rstrip().endswith(
        ":loudspeaker: Have feedback on the report? Share it with the people who run this "
        "covworker."
    )


def test_hide_comment_details_false_unfolds_the_middle_sections() -> None:
    folded = rendered()
    unfolded = rendered("comment:\n  hide_comment_details: false\n")
    assert "<details>" in folded and "<details>" not in unfolded
    summary = "Additional details and impacted files"
    assert visible_lines(unfolded) == [s for s in visible_lines(folded) if s != summary]


def test_nothing_to_fold_writes_no_fold() -> None:
    head = report({"a.py": (1, 0)})
    body = comment(compared(head, head), PullInfo(1, "main"), "comment:\n  layout: flags\n")
    assert "<details>" not in body


def test_header_condensed_header_and_newheader_write_the_same_lines() -> None:
    bodies = {
        name: rendered(f'comment:\n  layout: "{name}, diff"\n')
        for name in ("header", "condensed_header", "newheader")
    }
    assert len(set(bodies.values())) == 1


def test_condensed_files_gives_the_patch_table_only() -> None:
    body = rendered('comment:\n  layout: "condensed_header, condensed_files"\n')
    assert f"| [Files with missing lines]({PAGE}#diff-files) | Patch % | Lines |" in body
    assert "Coverage \u0394" not in body and "<details>" not in body


def test_hide_project_coverage_drops_the_project_line_and_keeps_the_tables() -> None:
    body = rendered("comment:\n  hide_project_coverage: true\n", extra_sections=[TESTS_PASSED])
    assert "Project coverage" not in body
    lines = body.splitlines()
    assert lines[2].startswith(":x: Patch coverage") and lines[3] == TESTS_PASSED
    assert "```diff" in body  # as Codecov: only the header and the footer change
    assert lines[-1].startswith(":loudspeaker: Thoughts on this report?")
    assert ":umbrella:" not in body


def test_the_layout_sorts_sections_as_codecov_does() -> None:
    plan = message_layout(("diff", "flags", "files:5", "footer", "newfooter"))
    assert plan.upper == ("condensed_header",)  # "files:5" is not "files": no newfiles
    assert plan.middle == ("diff", "flags", "files:5", "footer")
    assert plan.lower == ("condensed_footer",)
    default = message_layout(parse_codecov_yaml(None).comment.layout)
    assert default.upper == ("condensed_header", "newfiles")
    assert default.middle == ("diff", "flags", "files")
    assert message_layout(("condensed_files", "header", "reach")).upper == (
        "condensed_files",
        "header",
    )


def test_a_one_line_section_ends_the_header_and_a_longer_one_comes_above_the_fold() -> None:
    failures = "### :x: 1 Tests Failed:\n| Tests completed | Failed | Passed | Skipped |"
    body = rendered(extra_sections=[failures])
    assert body.index(":x: Patch coverage") < body.index("### :x: 1 Tests")
    assert body.index("### :x: 1 Tests") < body.index("<details>")
    unreadable = ":x: We are unable to process any of the uploaded JUnit XML files."
    lines = rendered(extra_sections=[unreadable]).splitlines()
    assert lines[lines.index(unreadable) - 1].startswith(":white_check_mark: Project coverage")


def test_every_link_goes_to_covworkers_pages_or_codecovs_documentation() -> None:
    for config in (None, OLD_LAYOUT, "comment:\n  show_carryforward_flags: true\n"):
        hrefs = re.findall(r'href="([^"]*)"', render_html(rendered(config)))
        assert hrefs
        assert all(h.startswith(("https://cov.example/", "https://docs.codecov.")) for h in hrefs)
    old = rendered(OLD_LAYOUT)
    for text in ("Codecov", "Files with missing lines", "d28caa2...abc0f94"):
        assert f"[{text}]({PAGE}" in old
    assert f"[Continue to review the full report in covworker]({PAGE})" in old


def test_without_a_public_url_the_comment_has_no_links_to_covworker() -> None:
    body = rendered(OLD_LAYOUT, links=CommentLinks())
    html = render_html(body)
    hrefs = re.findall(r'href="([^"]*)"', html)
    assert hrefs and all(h.startswith("https://docs.codecov.") for h in hrefs)
    lines = body.splitlines()
    assert lines[0] == "## Codecov Report"
    assert "Continue to review the full report in covworker." in lines
    assert "| Files with missing lines | Patch % | Lines |" in lines
    assert "| src/a.py | 66.66% | 2 Missing :warning:  |" in lines
    assert "Comparing base (`d28caa2`) to head (`abc0f94`)." in body
    assert "| old | `?` | |" in lines
    assert "| unit | `81.25% <66.66%> (-8.75%)` | :arrow_down: |" in lines
    default = rendered(links=CommentLinks())
    assert default.splitlines()[-3] == ":umbrella: View full report in covworker."


def test_nothing_from_an_upload_escapes_inside_the_fold() -> None:
    evil_path = "src/</details><img src=x onerror=alert(1)>[x](https://evil.example)@admin.py"
    evil_flag = "</summary><script>alert(1)</script>"
    head = Part.from_report(Report({evil_path: FileCoverage({1: 0, 2: 1})}))
    diff = parse_unified_diff(f"--- /dev/null\n+++ b/{evil_path}\n@@ -0,0 +1,2 @@\n+a\n+b\n")
    comparison = compared(
        head, Part.from_report(Report()), diff, head_flags={evil_flag: FlagInput(head)}
    )
    body = comment(comparison, PullInfo(1, "</details>`\n```\n<b>"))
    html = render_html(body)  # raw HTML on, as GitHub passes <details>
    tags = set(re.findall(r"</?([a-z0-9]+)", html))
    assert tags <= {"h2", "a", "p", "code", "table", "thead", "tbody", "tr", "th", "td"} | {
        "details",
        "summary",
        "pre",
        "br",
    }
    assert html.count("<details>") == 1 and html.count("</details>") == 1
    assert 'href="https://evil' not in html


def test_controls_from_an_upload_are_escapes_in_the_comment() -> None:
    evil_path = "src/evil\u202eyp.exe"
    evil_flag = "unit\x1b[8m"
    head = Part.from_report(Report({evil_path: FileCoverage({1: 0, 2: 1})}))
    diff = parse_unified_diff(f"--- /dev/null\n+++ b/{evil_path}\n@@ -0,0 +1,2 @@\n+a\n+b\n")
    comparison = compared(
        head, Part.from_report(Report()), diff, head_flags={evil_flag: FlagInput(head)}
    )
    body = comment(comparison, PullInfo(1, "main\u2066"))
    assert not {"\u202e", "\x1b", "\u2066"} & set(body)
    assert "evil\\\\u202eyp" in body or "evil\\u202eyp" in body
