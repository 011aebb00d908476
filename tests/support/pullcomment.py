"""Comparisons and comments for the tests of :mod:`app.pullrequests.comment`:
a small pull request (``rendered``) and links to covworker's pages (``LINKS``).
"""

from __future__ import annotations

from app.coverage import FileCoverage, Report
from app.coverage.columnar import Part
from app.pullrequests.comment import (
    CommentLinks,
    PullInfo,
    render_comment,
)
from app.pullrequests.compare import compare
from app.pullrequests.comparison import Comparison, FlagInput
from app.pullrequests.config import parse_codecov_yaml
from app.pullrequests.diff import Diff, parse_unified_diff

BASE = "d28caa2" + "0" * 33

HEAD = "abc0f94" + "1" * 33

PAGE = "https://cov.example/gh/o/r/commit/" + HEAD

LINKS = CommentLinks(
    report_url=PAGE,
    commit_url=lambda sha: f"https://cov.example/gh/o/r/commit/{sha}",
    file_url=lambda path: f"{PAGE}/file/{path}",
    flags_url=f"{PAGE}#flags",
    indirect_url=f"{PAGE}#base-h",
    missing_url=f"{PAGE}#diff-files",
)

#: Codecov's older full comment (``footer``, no fold).
OLD_LAYOUT = (
    'comment:\n  layout: "header, diff, flags, files, footer"\n  hide_comment_details: false\n'
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
    """The comment on ``comparison`` under ``config_text`` (a codecov.yml), with LINKS
    unless ``links=`` says otherwise."""
    kwargs.setdefault("links", LINKS)
    return render_comment(
        comparison,
        parse_codecov_yaml(config_text),
        pull=pull,
        **kwargs,  # type: ignore[arg-type]
    )


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
