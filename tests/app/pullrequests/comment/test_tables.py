"""The comment's tables: the Coverage Diff block, the flags and files tables."""

from __future__ import annotations

from app.pullrequests.comment import (
    PullInfo,
    coverage_diff,
)
from app.pullrequests.comparison import FlagInput
from app.pullrequests.config import parse_codecov_yaml
from app.pullrequests.diff import parse_unified_diff
from tests.support.pullcomment import (
    LINKS,
    comment,
    compared,
    rendered,
    report,
    ten_files,
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
