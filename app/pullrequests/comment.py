"""The pull-request comment, in Codecov's layout and wording.

Sections follow ``comment.layout`` as Codecov assembles them: the title,
the header (patch coverage, project coverage, base and head), the
"Files with missing lines" patch table when ``files``/``tree`` is listed,
then ``diff`` (the fenced "Coverage Diff" block), ``flags`` and
``files``/``tree`` in their order, then any extra sections (a tests
section), ``footer`` and the ``codecov.yml`` errors. Links go to
covworker's pages, not to codecov.io.

Every string that comes from an upload or the repository (file paths, flag
names, branch names, YAML values) goes through :func:`escape_markdown` (or
has backticks removed inside the fenced block), so it cannot open a link,
mention a user, start a table cell or inject HTML.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from urllib.parse import quote

from app.coverage.model import Totals
from app.pullrequests.compare import Comparison, FileComparison, FlagComparison
from app.pullrequests.config import CodecovConfig, ConfigError
from app.pullrequests.numbers import coverage, delta, percent, rounded

UPLOADER_DOCS = "https://docs.codecov.com/docs/codecov-uploader"
CARRYFORWARD_DOCS = "https://docs.codecov.io/docs/carryforward-flags"
DELTA_DOCS = "https://docs.codecov.io/docs/codecov-delta"
COMMENT_DOCS = "https://docs.codecov.io/docs/pull-request-comments"
#: Rows of the files tables unless the layout says ``files:N``.
DEFAULT_FILES_LIMIT = 10
#: Longest file path shown before it is cut from the left (Codecov's 50).
PATH_WIDTH = 50


@dataclass(frozen=True, slots=True)
class CommentLinks:
    """Where the comment's links go (covworker's pages, where Codecov links its own)."""

    #: covworker's page of this pull request's head commit (Codecov's "pull" link).
    pull_url: str
    #: The commit page of a sha (``COVWORKER_PUBLIC_URL/…``).
    commit_url: Callable[[str], str]
    #: A file's page at the head commit.
    file_url: Callable[[str], str]
    flags_url: str
    #: The head commit's page listing indirect changes.
    indirect_url: str


@dataclass(frozen=True, slots=True)
class PullInfo:
    number: int
    base_branch: str
    head_branch: str | None = None
    #: Commits the base branch is ahead of the compared base (Codecov's "behind").
    behind_by: int | None = None
    #: The pull request's base commit (named when it has no report).
    base_sha: str | None = None


# -- escaping -------------------------------------------------------------------

_PUNCTUATION = re.compile(r"([\\`*_{}\[\]()#+!|<>~&])")
_MENTION_OR_LINK = re.compile(r"(@|://|www\.)", re.IGNORECASE)
_ZERO_WIDTH = "\u200b"


def escape_markdown(text: str) -> str:
    """``text`` as literal Markdown/HTML text: no links, mentions, images or tags.

    The punctuation that can start Markdown or HTML is backslash-escaped
    (CommonMark allows it for any ASCII punctuation), so ``[x](y)``,
    ``<img>``, ``|``, code spans and emphasis stay text; ``@``, ``://`` and
    ``www.`` get a zero-width space so neither a mention nor an autolink
    forms; line breaks become spaces.
    """
    text = " ".join(text.splitlines())
    text = _MENTION_OR_LINK.sub(lambda m: m.group(1) + _ZERO_WIDTH, text)
    return _PUNCTUATION.sub(r"\\\1", text)


def _fence_safe(text: str) -> str:
    """Text inside the fenced block: one line, no backticks (it cannot close the fence)."""
    return " ".join(text.splitlines()).replace("`", "'")


def _url(url: str) -> str:
    """A link target that cannot end the Markdown link early."""
    return quote(url, safe=":/?&=#%~+,;@!$*")


def _short(path: str, width: int = PATH_WIDTH) -> str:
    return "..." + path[len(path) - width :] if len(path) > width else path


# -- gates ------------------------------------------------------------------------


def should_comment(
    config: CodecovConfig, comparison: Comparison, *, sessions: int, comment_exists: bool
) -> bool:
    """Codecov's gates: ``comment: false``, ``after_n_builds`` (of the comment and
    of ``codecov.notify``), ``require_base``, ``require_changes`` (skipped once
    a comment exists)."""
    settings = config.comment
    if not settings.enabled:
        return False
    if sessions < max(settings.after_n_builds, config.notify_after_n_builds):
        return False
    if settings.require_base and comparison.base is None:
        return False
    if comment_exists or settings.require_changes is False:
        return True
    expression = "any_change" if settings.require_changes is True else settings.require_changes
    return _requirements_met(config, comparison, expression)


def _requirements_met(config: CodecovConfig, comparison: Comparison, expression: str) -> bool:
    def holds(condition: str) -> bool:
        if condition == "any_change":
            return comparison.has_changes()
        if condition == "uncovered_patch":
            patch = coverage(comparison.patch)
            return patch is not None and patch < 100
        if condition == "coverage_drop":
            head, base = coverage(comparison.head), coverage(comparison.base)
            if head is None or base is None:
                return False
            threshold = config.project_statuses[0].threshold if config.project_statuses else 0
            return head < base - (Decimal(str(threshold)) + Decimal("0.01"))
        return False

    return any(
        all(holds(c.strip()) for c in alternative.split(" and "))
        for alternative in expression.split(" or ")
    )


# -- rendering ------------------------------------------------------------------


def render_comment(
    comparison: Comparison,
    config: CodecovConfig,
    *,
    pull: PullInfo,
    links: CommentLinks,
    yaml_errors: Sequence[ConfigError] = (),
    extra_sections: Sequence[str] = (),
) -> str:
    """The comment's Markdown. ``extra_sections`` (e.g. a tests section) are
    placed before the footer, as given (they must already be escaped)."""
    layout = [s.strip() for s in config.comment.layout if s.strip()]
    names = [s.split(":")[0] for s in layout]
    out: list[str] = [f"## [Codecov]({_url(links.pull_url)}) Report"]

    def section(lines: list[str]) -> None:
        if lines:
            out.extend(lines)
            out.append("")

    section(_header(comparison, config, pull, links))
    if "files" in names or "tree" in names:
        section(_patch_files(comparison, config, links, _limit(layout)))
    footer = False
    for name, entry in zip(names, layout, strict=True):
        if name == "diff":
            section(_diff_block(comparison, config, pull))
        elif name.startswith("flag"):
            section(_flags(comparison, config, links))
        elif name in ("files", "tree"):
            section(_files(comparison, config, links, _limit([entry])))
        elif name in ("footer", "condensed_footer", "newfooter"):
            footer = True
    for extra in extra_sections:
        section([extra.rstrip("\n")])
    if footer:
        section(_footer(comparison, links))
    section(_yaml_errors(yaml_errors))
    while out and out[-1] == "":
        out.pop()
    return "\n".join(out) + "\n"


def _limit(layout: list[str]) -> int:
    for entry in layout:
        name, _, n = entry.partition(":")
        if name in ("files", "tree") and n.strip().isdigit():
            return int(n)
    return DEFAULT_FILES_LIMIT


def _header(
    comparison: Comparison, config: CodecovConfig, pull: PullInfo, links: CommentLinks
) -> list[str]:
    lines = []
    patch = comparison.patch
    uncovered = patch.misses + patch.partials if patch is not None else 0
    patch_cov = coverage(patch)
    if uncovered and patch_cov is not None:
        noun = "lines" if uncovered > 1 else "line"
        lines.append(
            f"Attention: Patch coverage is `{percent(config, patch_cov)}%` with "
            f"`{uncovered} {noun}` in your changes missing coverage. Please review."
        )
    else:
        lines.append("All modified and coverable lines are covered by tests :white_check_mark:")
    if comparison.not_measured or comparison.diff_truncated:
        n = len(comparison.not_measured)
        what = f"{n} file{'s' if n != 1 else ''} of the diff" if n else "Part of the diff"
        lines.append(
            f"> :warning: {what} could not be measured: the provider gave no patch"
            + (" (its file list was cut short)" if comparison.diff_truncated else "")
            + "."
        )
    if config.comment.hide_project_coverage:
        return lines
    head_cov = coverage(comparison.head)
    if comparison.base is not None and comparison.base_sha and head_cov is not None:
        base_url = _url(links.commit_url(comparison.base_sha))
        head_url = _url(links.commit_url(comparison.head_sha))
        lines.append(
            f"> Project coverage is {percent(config, head_cov)}%. Comparing base "
            f"[(`{comparison.base_sha[:7]}`)]({base_url}) "
            f"to head [(`{comparison.head_sha[:7]}`)]({head_url})."
        )
    else:
        what = "BASE" if comparison.base is None else "HEAD"
        branch = pull.base_branch if comparison.base is None else (pull.head_branch or "")
        sha = (pull.base_sha or "") if comparison.base is None else comparison.head_sha
        where = f"{_code(branch)}@{_code(sha[:7])}" if sha else _code(branch)
        lines.append(
            f"> Please [upload]({UPLOADER_DOCS}) report for {what} "
            f"(`{where}`). [Learn more]"
            f"(https://docs.codecov.io/docs/error-reference#section-missing-{what.lower()}-commit)"
            f" about missing {what} report."
        )
    if pull.behind_by:
        branch = escape_markdown(pull.base_branch)
        lines.append(f"> Report is {pull.behind_by} commits behind head on {branch}.")
    return lines


def _code(text: str) -> str:
    """Text inside an inline code span: no backticks, one line."""
    return _fence_safe(text)


def _patch_files(
    comparison: Comparison, config: CodecovConfig, links: CommentLinks, limit: int
) -> list[str]:
    rows = comparison.files_with_missing_lines()
    if not rows:
        return []
    lines = [
        f"| [Files with missing lines]({_url(links.pull_url)}) | Patch % | Lines |",
        "|---|---|---|",
    ]
    for f in rows[:limit]:
        patch = f.patch or Totals()
        partials = len(f.patch_partials)
        partial_text = f"and {partials} partial{'s' if partials > 1 else ''} " if partials else ""
        cov = coverage(patch)
        shown = f"{percent(config, cov)}%" if cov is not None else "\xf8"
        lines.append(
            f"| {_file_link(f, links)} | {shown} | "
            f"[{len(f.patch_misses)} Missing {partial_text}:warning: ]"
            f"({_url(links.file_url(f.path))}) |"
        )
    if len(rows) > limit:
        lines.append(f"| ... and [{len(rows) - limit} more]({_url(links.pull_url)}) | |")
    return lines


def _file_link(f: FileComparison, links: CommentLinks) -> str:
    strike = "~~" if f.head is None else ""
    anchor = base64.b64encode(f.path.encode()).decode()
    return (
        f"{strike}[{escape_markdown(_short(f.path))}]"
        f"({_url(links.file_url(f.path))}#diff-{anchor}){strike}"
    )


def _metrics(
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


def _files(
    comparison: Comparison, config: CodecovConfig, links: CommentLinks, limit: int
) -> list[str]:
    rows = comparison.files_with_missing_lines()
    indirect = [f for f in comparison.indirect_changes() if not f.in_diff]
    lines: list[str] = []
    if rows:
        lines.append(f"| [Files with missing lines]({_url(links.pull_url)}) | Coverage \u0394 | |")
        lines.append("|---|---|---|")
        for f in rows[:limit]:
            before: Totals | bool = f.base if f.base is not None else False
            after: Totals | bool = f.head if f.head is not None else False
            lines.append(f"| {_file_link(f, links)} {_metrics(config, before, after, f.patch)}")
        if len(rows) > limit:
            lines.append(f"| ... and [{len(rows) - limit} more]({_url(links.pull_url)}) | |")
    if indirect:
        n = len(indirect)
        plural = "s" if n > 1 else ""
        if rows:
            lines.append("")
            lines.append(
                f"... and [{n} file{plural} with indirect coverage changes]"
                f"({_url(links.indirect_url)})"
            )
        else:
            lines.append(
                f"[see {n} file{plural} with indirect coverage changes]({_url(links.indirect_url)})"
            )
    return lines


def _flags(comparison: Comparison, config: CodecovConfig, links: CommentLinks) -> list[str]:
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
        f"| [Flag]({_url(links.flags_url)}) | Coverage \u0394 | |"
        + (" *Carryforward flag |" if carried_column else ""),
        "|---|---|---|" + ("---|" if carried_column else ""),
    ]
    for f in sorted(shown, key=lambda f: f.name):
        before: Totals | None = f.base if comparison.base is not None else None
        metrics = _metrics(config, before, f.head, f.patch)
        if f.carried_from is not None:
            cf = (
                f" Carriedforward from [{f.carried_from[:7]}]"
                f"({_url(links.commit_url(f.carried_from))}) |"
            )
        else:
            cf = " |" if carried_column else ""
        lines.append(f"| [{escape_markdown(f.name)}]({_url(links.flags_url)}) {metrics}{cf}")
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


# -- the "Coverage Diff" block ------------------------------------------------------


def _diff_block(comparison: Comparison, config: CodecovConfig, pull: PullInfo) -> list[str]:
    return ["```diff", *coverage_diff(comparison, config, pull), "```"]


def coverage_diff(comparison: Comparison, config: CodecovConfig, pull: PullInfo) -> list[str]:
    """The lines of the fenced "Coverage Diff" table (Codecov's ``diff_to_string``)."""
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

    rows = [
        ("|##", f"{_fence_safe(pull.base_branch)}|", f"#{pull.number}|", "+/-|", "##|"),
        row("Coverage", cov(base), cov(head), "+", "-"),
        row("Files", base.files if base else None, head.files, " ", " "),
        row("Lines", base.lines if base else None, head.lines, " ", " "),
        row("Hits", base.hits if base else None, head.hits, "+", "-"),
        row("Misses", base.misses if base else None, head.misses, "-", "+"),
        row("Partials", base.partials if base else None, head.partials, "-", "+"),
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
    lines = [title, table[0], spacer, table[1], spacer, *table[2:4], spacer, *table[4:7]]
    return [line for line in lines if line.strip(" ")]


# -- footer and errors --------------------------------------------------------------


def _footer(comparison: Comparison, links: CommentLinks) -> list[str]:
    base = (comparison.base_sha or "")[:7]
    return [
        "------",
        "",
        f"[Continue to review the full report in covworker]({_url(links.pull_url)}).",
        f"> **Legend** - [Click here to learn more]({DELTA_DOCS})",
        "> `\u0394 = absolute <relative> (impact)`, `\xf8 = not affected`, `? = missing data`",
        f"> Last update [{base}...{comparison.head_sha[:7]}]({_url(links.pull_url)}). "
        f"Read the [comment docs]({COMMENT_DOCS}).",
    ]


def _yaml_errors(errors: Sequence[ConfigError]) -> list[str]:
    if not errors:
        return []
    lines = [
        ":x: The `codecov.yml` of this commit is invalid; these keys were ignored and their "
        "defaults used:"
    ]
    lines += [f"- {escape_markdown(e.key)}: {escape_markdown(e.message)}" for e in errors]
    return lines
