"""The comment's tables, as Codecov's section writers draw them:

- ``patch_files``: "Files with missing lines | Patch % | Lines" (Codecov's
  ``newfiles``/``condensed_files``);
- ``files``: "Files with missing lines | Coverage Δ" (``files``/``tree``),
  with the indirect-changes line;
- ``flags``: "Flag | Coverage Δ", carried-forward flags hidden unless
  ``show_carryforward_flags``;
- ``coverage_diff``: the fenced "Coverage Diff" block (``diff_to_string``),
  with its ``Branches`` row.

covworker lists only the files with uncovered added lines, most first.
"""

from __future__ import annotations

import base64
import re
from decimal import Decimal

from app.coverage.model import Totals
from app.pullrequests.comment.text import (
    CommentLinks,
    PullInfo,
    code,
    escape_markdown,
    link,
    short,
)
from app.pullrequests.comparison import Comparison, FileComparison, FlagComparison
from app.pullrequests.config import CodecovConfig
from app.pullrequests.numbers import coverage, delta, percent, rounded

CARRYFORWARD_DOCS = "https://docs.codecov.io/docs/carryforward-flags"
#: Rows of a files table unless the layout says ``files:N``.
DEFAULT_FILES_LIMIT = 10


def patch_files(comparison: Comparison, config: CodecovConfig, links: CommentLinks) -> list[str]:
    rows = comparison.files_with_missing_lines()
    if not rows:
        return []
    limit = DEFAULT_FILES_LIMIT  # Codecov's ``newfiles`` takes no limit
    lines = [
        f"| {link('Files with missing lines', links.missing_url)} | Patch % | Lines |",
        "|---|---|---|",
    ]
    for f in rows[:limit]:
        patch = f.patch or Totals()
        partials = len(f.patch_partials)
        partial_text = f"and {partials} partial{'s' if partials > 1 else ''} " if partials else ""
        cov = coverage(patch)
        shown = f"{percent(config, cov)}%" if cov is not None else "\xf8"
        missing = link(
            f"{len(f.patch_misses)} Missing {partial_text}:warning: ", links.file_url(f.path)
        )
        lines.append(f"| {_file_cell(f, links)} | {shown} | {missing} |")
    if len(rows) > limit:
        lines.append(f"| ... and {link(f'{len(rows) - limit} more', links.missing_url)} | |")
    return lines


def files(
    comparison: Comparison, config: CodecovConfig, links: CommentLinks, limit: int
) -> list[str]:
    rows = comparison.files_with_missing_lines()
    indirect = [f for f in comparison.indirect_changes() if not f.in_diff]
    lines: list[str] = []
    if rows:
        header = link("Files with missing lines", links.missing_url)
        lines += [f"| {header} | Coverage \u0394 | |", "|---|---|---|"]
        for f in rows[:limit]:
            before: Totals | bool = f.base if f.base is not None else False
            after: Totals | bool = f.head if f.head is not None else False
            lines.append(f"| {_file_cell(f, links)} {metrics(config, before, after, f.patch)}")
        if len(rows) > limit:
            lines.append(f"| ... and {link(f'{len(rows) - limit} more', links.missing_url)} | |")
    if indirect:
        n = len(indirect)
        text = f"{n} file{'s' if n > 1 else ''} with indirect coverage changes"
        if rows:
            lines += ["", f"... and {link(text, links.indirect_url)}"]
        else:
            lines.append(link(f"see {text}", links.indirect_url))
    return lines


def _file_cell(f: FileComparison, links: CommentLinks) -> str:
    strike = "~~" if f.head is None else ""
    target = links.file_url(f.path)
    if target:
        target += "#diff-" + base64.b64encode(f.path.encode()).decode()
    return f"{strike}{link(escape_markdown(short(f.path)), target)}{strike}"


def metrics(
    config: CodecovConfig,
    before: Totals | bool | None,
    after: Totals | bool | None,
    patch: Totals | None,
) -> str:
    """``| `83.33% <100.00%> (+2.10%)` | :arrow_up: |`` (Codecov's ``make_metrics``)."""
    if after is None:
        return "| `?` | |"
    if after is False or not isinstance(after, Totals):
        return "| | |"
    head_cov = coverage(after)
    base_cov = coverage(before) if isinstance(before, Totals) else None
    moved = None
    if head_cov is not None and base_cov is not None:
        moved = Decimal(float(head_cov) - float(base_cov))  # in float, as Codecov's tables
    absolute = f"{percent(config, head_cov)}%" if head_cov is not None else "\u2205"
    patch_cov = coverage(patch) if patch is not None else Decimal(0)
    relative = f"{percent(config, patch_cov)}%" if patch_cov is not None else "\xf8"
    if isinstance(before, Totals):
        impact = delta(config, moved)
    elif before is None:
        impact = "?"
    else:
        impact = "\xf8"
    icon = (
        ":arrow_up:"
        if moved is not None and moved > 0
        else (":arrow_down:" if moved is not None and moved < 0 else "")
    )
    return f"| `{absolute} <{relative}> ({impact})` | {icon} |".replace("|  |", "| |")


def flags(comparison: Comparison, config: CodecovConfig, links: CommentLinks) -> list[str]:
    show_carried = config.comment.show_carryforward_flags
    shown: list[FlagComparison] = [
        f
        for f in comparison.flags.values()
        if f.head is not None and (show_carried or not f.carried_forward)
    ]
    shown += [f for f in comparison.flags.values() if f.head is None]
    if not shown:
        return []
    carried_column = any(f.carried_forward for f in shown)
    lines = [
        f"| {link('Flag', links.flags_url)} | Coverage \u0394 | |"
        + (" *Carryforward flag |" if carried_column else ""),
        "|---|---|---|" + ("---|" if carried_column else ""),
    ]
    for f in sorted(shown, key=lambda f: f.name):
        before: Totals | None = f.base if comparison.base is not None else None
        cells = metrics(config, before, f.head, f.patch)
        if f.carried_from is not None:
            source = link(f.carried_from[:7], links.commit_url(f.carried_from))
            cf = f" Carriedforward from {source} |"
        else:
            cf = " |" if carried_column else ""
        lines.append(f"| {link(escape_markdown(f.name), links.flags_url)} {cells}{cf}")
    lines.append("")
    if carried_column and show_carried:
        lines.append(
            f"*This pull request uses carry forward flags. [Click here]({CARRYFORWARD_DOCS}) "
            "to find out more."
        )
    elif not show_carried:
        lines.append(
            "Flags with carried forward coverage won't be shown. "
            f"[Click here]({CARRYFORWARD_DOCS}#carryforward-flags-in-the-pull-request-comment) "
            "to find out more."
        )
    return lines


def diff_block(comparison: Comparison, config: CodecovConfig, pull: PullInfo) -> list[str]:
    return ["```diff", *coverage_diff(comparison, config, pull), "```"]


def coverage_diff(comparison: Comparison, config: CodecovConfig, pull: PullInfo) -> list[str]:
    """The lines of the fenced "Coverage Diff" table (Codecov's ``diff_to_string``).

    Rows: Coverage; Files, Lines, Branches; Hits, Misses, Partials, each
    dropped when both sides are 0. The sign column is ``+`` when the row got
    better (Coverage, Hits up; Misses, Partials down), ``-`` when worse, blank
    for Files, Lines and Branches or no change.
    """
    base, head = comparison.base, comparison.head

    def fmt(value: Decimal | int | None) -> str:
        if value is None:
            return "?"
        if isinstance(value, Decimal):
            return f"{rounded(config, value)}%"
        return str(value)

    def row(
        title: str, c1: Decimal | int | None, c2: Decimal | int | None, plus: str, minus: str
    ) -> tuple[str, ...]:
        if c1 == 0 and c2 == 0:
            return ("", "", "", "", "")
        if c1 is None or c2 is None:
            change = ""
        elif isinstance(c1, Decimal) or isinstance(c2, Decimal):
            change = fmt(Decimal(str(float(c2) - float(c1))))
        else:
            change = str(c2 - c1)
        zero = change in ("", "0", "0%") or re.fullmatch(r"0\.0+%?", change) is not None
        sign = " " if zero else (plus if not change.startswith("-") else minus)
        shown_change = "" if zero else (change if change.startswith("-") else "+" + change)
        return (f"{sign} {title}", f"{fmt(c1)}|", f"{fmt(c2)}|", f"{shown_change}|", "")

    def cov(t: Totals | None) -> Decimal | None:
        return coverage(t) if t is not None else None

    def count(t: Totals | None, name: str) -> int | None:
        return None if t is None else int(getattr(t, name))

    rows = [
        ("|##", f"{code(pull.base_branch)}|", f"#{pull.number}|", "+/-|", "##|"),
        row("Coverage", cov(base), cov(head), "+", "-"),
        row("Files", count(base, "files"), head.files, " ", " "),
        row("Lines", count(base, "lines"), head.lines, " ", " "),
        row("Branches", count(base, "branches"), head.branches, " ", " "),
        row("Hits", count(base, "hits"), head.hits, "+", "-"),
        row("Misses", count(base, "misses"), head.misses, "-", "+"),
        row("Partials", count(base, "partials"), head.partials, "-", "+"),
    ]
    widths = [max(len(r[i].strip("|")) for r in rows) for i in range(5)]

    def fill(width: int, cell: str) -> str:
        text = cell.strip("|")
        if cell.endswith("|"):
            return f"{text:^{width}}" if cell.startswith("|") else text.rjust(width)
        return text.ljust(width)

    table = ["   ".join(fill(w, c) for w, c in zip(widths, r, strict=True)) for r in rows]
    width = len(table[0])
    spacer = "=" * width
    # format's ``^`` puts an odd extra space on the right, as Codecov's title has it
    title = "@@" + f"{'Coverage Diff':^{width - 4}}" + "@@"
    lines = [title, table[0], spacer, table[1], spacer, *table[2:5], spacer, *table[5:8]]
    lines = [line for line in lines if line.strip(" ")]
    while lines[-1] == spacer:  # no count rows under it (Codecov strips a last "=" line)
        lines.pop()
    return lines
