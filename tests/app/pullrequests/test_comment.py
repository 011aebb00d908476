"""The comment: Codecov's layout and wording, checked against its own examples."""

from __future__ import annotations

import re

from markdown_it import MarkdownIt

from app.coverage import FileCoverage, Report
from app.coverage.columnar import Part
from app.pullrequests.comment import (
    CommentLinks,
    PullInfo,
    coverage_diff,
    escape_markdown,
    render_comment,
    should_comment,
)
from app.pullrequests.compare import Comparison, FlagInput, compare
from app.pullrequests.config import ConfigError, parse_codecov_yaml
from app.pullrequests.diff import Diff, parse_unified_diff

BASE = "d28caa2" + "0" * 33
HEAD = "abc0f94" + "1" * 33
LINKS = CommentLinks(
    pull_url="https://cov.example/gh/o/r/commit/" + HEAD,
    commit_url=lambda sha: f"https://cov.example/gh/o/r/commit/{sha}",
    file_url=lambda path: f"https://cov.example/gh/o/r/commit/{HEAD}/file/{path}",
    flags_url=f"https://cov.example/gh/o/r/commit/{HEAD}#flags",
    indirect_url=f"https://cov.example/gh/o/r/commit/{HEAD}#indirect",
)


def report(files: dict[str, tuple[int, int]]) -> Part:
    """``{path: (hits, misses)}``: hit lines first, then missed ones."""
    return Part.from_report(
        Report(
            {
                path: FileCoverage({i + 1: (1 if i < hits else 0) for i in range(hits + misses)})
                for path, (hits, misses) in files.items()
            }
        )
    )


def ten_files(hits: list[int], misses: list[int]) -> Part:
    return report({f"src/m{i}.py": (hits[i], misses[i]) for i in range(10)})


def compared(
    head: Part,
    base: Part | None,
    diff: Diff | None = None,
    *,
    head_flags: dict[str, FlagInput] | None = None,
    base_flags: dict[str, FlagInput] | None = None,
) -> Comparison:
    """``head`` at HEAD compared with ``base`` at BASE (no base: no base commit)."""
    return compare(
        head,
        base,
        diff,
        head_sha=HEAD,
        base_sha=None if base is None else BASE,
        head_flags=head_flags,
        base_flags=base_flags,
    )


def comment(
    comparison: Comparison, pull: PullInfo, config_text: str | None = None, **kwargs: object
) -> str:
    """The comment on ``comparison`` under ``config_text`` (a codecov.yml), with LINKS."""
    return render_comment(
        comparison,
        parse_codecov_yaml(config_text),
        pull=pull,
        links=LINKS,
        **kwargs,  # type: ignore[arg-type]
    )


def test_the_coverage_diff_block_is_codecovs_example_character_for_character() -> None:
    # Codecov's example: dev vs #21, 96.36% -> 95.60%, 385 -> 387 lines, 371 -> 370 hits
    base = ten_files([38] * 9 + [29], [1] * 9 + [5])  # 371 hits, 14 misses
    head = ten_files([38] * 9 + [28], [1] * 9 + [8])  # 370 hits, 17 misses
    comparison = compared(head, base)
    lines = coverage_diff(comparison, parse_codecov_yaml(None), PullInfo(21, "dev"))
    assert [line.rstrip() for line in lines] == [
        "@@            Coverage Diff             @@",
        "##              dev      #21      +/-   ##",
        "==========================================",
        "- Coverage   96.36%   95.60%   -0.76%",
        "==========================================",
        "  Files          10       10",
        "  Lines         385      387       +2",
        "==========================================",
        "- Hits          371      370       -1",
        "- Misses         14       17       +3",
    ]


def rendered(config_text: str | None = None, **kwargs: object) -> str:
    # base: a.py 9/10, b.py 5/10; head adds 6 lines to a.py (4 hit, 2 missed), b.py improves
    base = report({"src/a.py": (9, 1), "src/b.py": (5, 5)})
    head_files = {
        "src/a.py": FileCoverage(
            {**{i: 1 for i in range(1, 10)}, 10: 0, 11: 1, 12: 1, 13: 1, 14: 1, 15: 0, 16: 0}
        ),
        "src/b.py": FileCoverage({i: 1 if i <= 7 else 0 for i in range(1, 11)}),
    }
    head = Part.from_report(Report(head_files))
    diff = parse_unified_diff("--- a/src/a.py\n+++ b/src/a.py\n@@ -10,0 +11,6 @@\n" + "+x\n" * 6)
    unit_head = Part.from_report(Report({"src/a.py": head_files["src/a.py"]}))
    unit_base = report({"src/a.py": (9, 1)})
    comparison = compared(
        head,
        base,
        diff,
        head_flags={
            "unit": FlagInput(unit_head),
            "ui": FlagInput(report({"src/b.py": (7, 3)}), carried_from="c0ffee0" + "2" * 33),
        },
        base_flags={"unit": FlagInput(unit_base), "old": FlagInput(unit_base)},
    )
    return comment(comparison, PullInfo(7, "main", "feature"), config_text, **kwargs)


def test_a_full_comment_reads_as_codecovs() -> None:
    body = rendered()
    lines = body.splitlines()
    assert lines[0] == f"## [Codecov]({LINKS.pull_url}) Report"
    assert lines[1] == (
        "Attention: Patch coverage is `66.66%` with `2 lines` in your changes missing "
        "coverage. Please review."
    )
    assert lines[2] == (
        "> Project coverage is 76.92%. Comparing base "
        f"[(`d28caa2`)](https://cov.example/gh/o/r/commit/{BASE}) to head "
        f"[(`abc0f94`)](https://cov.example/gh/o/r/commit/{HEAD})."
    )
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
    files = lines.index(f"| [Files with missing lines]({LINKS.pull_url}) | Coverage \u0394 | |")
    assert lines[files + 2] == f"| {a_link} | `81.25% <66.66%> (-8.75%)` | :arrow_down: |"
    # b.py changed outside the diff: an indirect change
    assert f"... and [1 file with indirect coverage changes]({LINKS.indirect_url})" in lines
    assert (
        "> `\u0394 = absolute <relative> (impact)`, `\xf8 = not affected`, `? = missing data`"
        in lines
    )


def test_carried_forward_flags_get_their_column_when_asked() -> None:
    body = rendered("comment:\n  show_carryforward_flags: true\n")
    assert f"| [Flag]({LINKS.flags_url}) | Coverage \u0394 | | *Carryforward flag |" in body
    assert (
        f"| [ui]({LINKS.flags_url}) | `70.00% <\xf8> (?)` | | Carriedforward from "
        f"[c0ffee0](https://cov.example/gh/o/r/commit/c0ffee0{'2' * 33}) |" in body
    )
    assert "*This pull request uses carry forward flags." in body


def test_the_example_flag_cell_of_the_reference() -> None:
    # 58.74% head, patch 80.95% (17/21), +0.18 against the base
    head = report({"a.py": (587_450 - 17, 412_550 - 4), "n.py": (17, 4)})
    base = report({"a.py": (585_640, 414_360)})
    diff = parse_unified_diff("--- /dev/null\n+++ b/n.py\n@@ -0,0 +1,21 @@\n" + "+x\n" * 21)
    comparison = compared(
        head, base, diff, head_flags={"unit": FlagInput(head)}, base_flags={"unit": FlagInput(base)}
    )
    body = comment(comparison, PullInfo(1, "main"))
    assert f"| [unit]({LINKS.flags_url}) | `58.74% <80.95%> (+0.18%)` | :arrow_up: |" in body


def test_layout_picks_sections_and_extra_sections_come_before_the_footer() -> None:
    body = rendered("comment:\n  layout: header, footer\n", extra_sections=["### Tests\n3 failed"])
    assert "```diff" not in body and "| [Flag]" not in body and "Files with missing" not in body
    assert body.index("### Tests") < body.index("------")


def test_no_base_asks_for_an_upload_of_it() -> None:
    head = report({"a.py": (1, 1)})
    comparison = compared(head, None)
    body = comment(comparison, PullInfo(3, "main", base_sha="1234567" + "0" * 33))
    assert (
        "> Please [upload](https://docs.codecov.com/docs/codecov-uploader) report for BASE "
        "(`main@1234567`)." in body
    )
    assert "  Coverage      ?   50.00%" in body
    without_sha = comment(comparison, PullInfo(3, "main"))
    assert "report for BASE (`main`)." in without_sha


def test_yaml_errors_are_listed_at_the_end_escaped() -> None:
    body = rendered(yaml_errors=[ConfigError("comment.behavior", "must be one of …, not '<b>'")])
    assert body.rstrip().splitlines()[-1] == ("- comment.behavior: must be one of …, not '\\<b\\>'")


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


def test_should_comment_follows_codecovs_gates() -> None:
    head = report({"a.py": (1, 1)})
    same = compared(head, head, parse_unified_diff(""))
    nobase = compared(head, None)
    default = parse_codecov_yaml(None)
    assert should_comment(default, same, sessions=1, comment_exists=False)
    assert not should_comment(
        parse_codecov_yaml("comment: false"), same, sessions=1, comment_exists=True
    )
    after = parse_codecov_yaml("comment:\n  after_n_builds: 3\n")
    assert not should_comment(after, same, sessions=2, comment_exists=False)
    assert should_comment(after, same, sessions=3, comment_exists=False)
    notify = parse_codecov_yaml("codecov:\n  notify:\n    after_n_builds: 2\n")
    assert not should_comment(notify, same, sessions=1, comment_exists=False)
    changes = parse_codecov_yaml("comment:\n  require_changes: true\n")
    assert not should_comment(changes, same, sessions=1, comment_exists=False)
    assert should_comment(changes, same, sessions=1, comment_exists=True)
    base = parse_codecov_yaml("comment:\n  require_base: true\n")
    assert not should_comment(base, nobase, sessions=1, comment_exists=False)
    drop = parse_codecov_yaml('comment:\n  require_changes: "coverage_drop or uncovered_patch"\n')
    worse = compared(report({"a.py": (0, 2)}), head)
    assert should_comment(drop, worse, sessions=1, comment_exists=False)
    assert not should_comment(drop, same, sessions=1, comment_exists=False)


def test_codecovs_legacy_default_layout_renders_its_sections() -> None:
    body = rendered('comment:\n  layout: "reach,diff,flags,tree:1,reach"\n')
    assert "```diff" in body and "| [Flag]" in body
    assert body.count("Coverage \u0394 | |") == 2  # flags and files (tree) tables
    assert "------" not in body  # no footer in that layout


def test_files_the_provider_gave_no_patch_for_are_named_as_not_measured() -> None:
    head = report({"src/a.py": (1, 1)})
    diff = parse_unified_diff("--- a/src/a.py\n+++ b/src/a.py\n@@ -1,0 +2,1 @@\n+x\n")
    diff.omitted = ["assets/[x](https://evil.example)@admin`.json"] + [
        f"data/big{i:02}.csv" for i in range(11)
    ]
    body = comment(compared(head, head, diff), PullInfo(7, "main"))
    (line,) = [line for line in body.splitlines() if "not measured" in line]
    assert line.startswith("> :warning: 12 files of the diff not measured")
    assert "`data/big00.csv`" in line and "`data/big08.csv`" in line
    assert "big09" not in line and line.endswith(" and 2 more.")
    html = MarkdownIt("commonmark").render(body)
    assert 'href="https://evil' not in html  # a path stays inside its code span
    assert "cut short" not in body

    diff.truncated = True
    diff.omitted = []
    truncated = comment(compared(head, head, diff), PullInfo(7, "main"))
    assert (
        "> :warning: The provider's file list of the diff was cut short at its limit: "
        "files past it are not measured." in truncated.splitlines()
    )


def test_a_diff_measured_whole_says_nothing_about_unmeasured_files() -> None:
    assert "not measured" not in rendered()
