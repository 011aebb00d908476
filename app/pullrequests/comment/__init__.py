"""The pull-request comment, in Codecov's layout and wording.

``comment.layout`` picks the sections as Codecov's ``get_message_layout``
does, into three parts:

- upper: the header (``header``, ``condensed_header`` or ``newheader``, one
  and the same; ``condensed_header`` is put first when none is listed) and
  the "Files with missing lines | Patch %" table (``condensed_files``, and
  ``newfiles``, added whenever the layout lists ``files`` or ``tree``);
- middle, in the layout's order: ``diff`` (the Coverage Diff block),
  ``flag*`` (the flags table), ``files*``/``tree*`` (the files table, ``:N``
  rows), ``footer`` (Codecov's older footer); with ``hide_comment_details``
  they are folded in ``<details><summary>Additional details and impacted
  files</summary>``;
- lower: ``condensed_footer`` (``newfooter``), the two-line footer.

Sections covworker has nothing for (``reach``, ``components``, …) write
nothing. The title is ``## [Codecov](…) Report``; the ``codecov.yml``
errors come last. Every link goes to covworker's pages (:class:`CommentLinks`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.pullrequests.comment.fit import MAX_COMMENT_CHARS, fit_markdown
from app.pullrequests.comment.footer import condensed_footer, footer, listed_errors
from app.pullrequests.comment.gates import should_comment
from app.pullrequests.comment.header import header_lines
from app.pullrequests.comment.tables import (
    DEFAULT_FILES_LIMIT,
    coverage_diff,
    diff_block,
    files,
    flags,
    patch_files,
)
from app.pullrequests.comment.text import CommentLinks, PullInfo, escape_markdown, link
from app.pullrequests.comparison import Comparison
from app.pullrequests.config import CodecovConfig, ConfigError

__all__ = [
    "CommentLinks",
    "PullInfo",
    "coverage_diff",
    "escape_markdown",
    "message_layout",
    "render_comment",
    "should_comment",
]

HEADER_SECTIONS = frozenset({"header", "newheader", "condensed_header"})
FOLD = "<details><summary>Additional details and impacted files</summary>"


@dataclass(frozen=True, slots=True)
class MessageLayout:
    """The layout's sections in the comment's three parts (see the module)."""

    upper: tuple[str, ...]
    middle: tuple[str, ...]
    lower: tuple[str, ...]


def message_layout(layout: Sequence[str]) -> MessageLayout:
    """Codecov's ``get_message_layout``: which section goes where, by its name."""
    sections = [s.strip() for s in layout if s.strip()]
    if not any(s in HEADER_SECTIONS for s in sections):
        sections.insert(0, "condensed_header")
    if "files" in sections or "tree" in sections:  # exact names, as Codecov's test
        sections.append("newfiles")
    upper: list[str] = []
    middle: list[str] = []
    lower: list[str] = []
    for s in sections:
        if s in HEADER_SECTIONS or s in ("newfiles", "condensed_files"):
            upper.append(s)
        elif s.startswith(("flag", "files", "tree")) or s in ("diff", "footer"):
            middle.append(s)
        elif s in ("newfooter", "condensed_footer"):
            lower.append("condensed_footer")
    return MessageLayout(tuple(upper), tuple(middle), tuple(lower))


def render_comment(
    comparison: Comparison,
    config: CodecovConfig,
    *,
    pull: PullInfo,
    links: CommentLinks,
    yaml_errors: Sequence[ConfigError] = (),
    extra_sections: Sequence[str] = (),
    max_chars: int = MAX_COMMENT_CHARS,
) -> str:
    """The comment's Markdown, at most ``max_chars`` characters.

    ``extra_sections`` are Markdown the caller made (and escaped), such as
    the tests section: a section of one line is a status line and ends the
    header (``:white_check_mark: All tests successful. No failed tests
    found.``, as Codecov writes it there); a longer one (the failed tests)
    follows the upper part, above the fold.

    A comment that would be longer has its longer extra sections cut first
    (the failures listed), so the coverage keeps its place; then, if still
    too long, its end (:mod:`app.pullrequests.comment.fit`).
    """
    extras = [s.strip("\n") for s in extra_sections if s.strip()]
    args = (comparison, config, pull, links, yaml_errors)
    body = _render(*args, extras)
    over = len(body) - max_chars
    if over > 0 and any("\n" in s for s in extras):
        longest = max((s for s in extras if "\n" in s), key=len)
        room = max(0, len(longest) - over)
        cut = fit_markdown(longest, room, links.report_url)
        if "\n" not in cut:  # only the note: the section's title stays, so it stays a block
            cut = f"{longest.partition(chr(10))[0]}\n\n{cut}"
        extras = [cut if s is longest else s for s in extras]
        body = _render(*args, extras)
    return fit_markdown(body, max_chars, links.report_url)


def _render(
    comparison: Comparison,
    config: CodecovConfig,
    pull: PullInfo,
    links: CommentLinks,
    yaml_errors: Sequence[ConfigError],
    extras: list[str],
) -> str:
    status_lines = [s for s in extras if "\n" not in s]
    blocks = [s for s in extras if "\n" in s]
    plan = message_layout(config.comment.layout)
    out: list[str] = [f"## {link('Codecov', links.report_url)} Report", ""]

    def add(lines: list[str]) -> None:
        if lines:
            out.extend([*lines, ""])

    for name in plan.upper:
        if name in HEADER_SECTIONS:
            add(header_lines(comparison, config, pull, links, status_lines))
        else:
            add(patch_files(comparison, config, links))
    for block in blocks:
        add([block])
    middle: list[str] = []
    for name in plan.middle:
        lines: list[str] = []
        if name == "diff":
            lines = diff_block(comparison, config, pull)
        elif name.startswith("flag"):
            lines = flags(comparison, config, links)
        elif name.startswith(("files", "tree")):
            lines = files(comparison, config, links, _limit(name))
        elif name == "footer":
            lines = footer(comparison, links)
        if lines:
            middle += [*lines, ""]
    if middle and config.comment.hide_comment_details:
        add([FOLD, "", *middle, "</details>"])
    else:
        out.extend(middle)
    for _ in plan.lower:
        add(condensed_footer(config, links))
    add(listed_errors(yaml_errors))
    while out and out[-1] == "":
        out.pop()
    return "\n".join(out) + "\n"


def _limit(section: str) -> int:
    _, _, n = section.partition(":")
    return int(n) if n.strip().isdigit() else DEFAULT_FILES_LIMIT
