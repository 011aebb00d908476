"""What every part of the comment shares: where its links go, the pull
request it is written on, and the escaping of everything that came from an
upload, a provider or ``codecov.yml``.

Every string from outside (file paths, flag names, branch names, YAML
values) goes through :func:`escape_markdown`, or :func:`code` inside a code
span or the fenced block, so it cannot open a link, mention a user, start a
table cell or inject HTML, inside the ``<details>`` fold as outside it;
control and bidirectional formatting characters are written as their
escapes first (:func:`app.pullrequests.visible.visible`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import quote

from app.pullrequests.visible import visible

#: Longest file path shown before it is cut from the left (Codecov's 50).
PATH_WIDTH = 50


def _no_link(_: str) -> str:
    return ""


@dataclass(frozen=True, slots=True)
class CommentLinks:
    """Where the comment's links go: covworker's pages, where Codecov links its own.

    An empty URL means no link: the text is written plain (a deployment
    without ``COVWORKER_PUBLIC_URL`` has no address to link to, and the
    comment never links back to the pull request it is written on).
    """

    #: The head commit's page (the title, the full report, "Last update").
    report_url: str = ""
    #: The commit page of a sha.
    commit_url: Callable[[str], str] = _no_link
    #: A file's page at the head commit.
    file_url: Callable[[str], str] = _no_link
    #: The head commit page's flags table.
    flags_url: str = ""
    #: The head commit page's changes against the base (indirect changes).
    indirect_url: str = ""
    #: The head commit page's files of the diff, each added line marked
    #: (the "Files with missing lines" headers).
    missing_url: str = ""


@dataclass(frozen=True, slots=True)
class PullInfo:
    number: int
    base_branch: str
    head_branch: str | None = None
    #: Commits the base branch is ahead of the compared base (Codecov's "behind").
    behind_by: int | None = None
    #: The pull request's base commit (named when it has no report).
    base_sha: str | None = None


_PUNCTUATION = re.compile(r"([\\`*_{}\[\]()#+!|<>~&])")
_MENTION_OR_LINK = re.compile(r"(@|://|www\.)", re.IGNORECASE)
_ZERO_WIDTH = "\u200b"


def escape_markdown(text: str) -> str:
    """``text`` as literal Markdown/HTML text: no links, mentions, images or tags.

    The punctuation that can start Markdown or HTML is backslash-escaped
    (CommonMark allows it for any ASCII punctuation), so ``[x](y)``,
    ``<img>``, ``|``, code spans and emphasis stay text; ``@``, ``://`` and
    ``www.`` get a zero-width space so neither a mention nor an autolink
    forms; line breaks become spaces; controls (ESC, U+202E ...) are shown
    as their escapes.
    """
    text = visible(" ".join(text.splitlines()))
    text = _MENTION_OR_LINK.sub(lambda m: m.group(1) + _ZERO_WIDTH, text)
    return _PUNCTUATION.sub(r"\\\1", text)


def code(text: str) -> str:
    """Text inside a code span or the fenced block: one line, no backticks
    (it cannot close the span or the fence), controls shown as escapes."""
    return visible(" ".join(text.splitlines())).replace("`", "'")


def url(target: str) -> str:
    """A link target that cannot end the Markdown link early."""
    return quote(target, safe=":/?&=#%~+,;@!$*")


def link(text: str, target: str) -> str:
    """``[text](target)``, or ``text`` alone when there is no target.
    ``text`` must already be Markdown (escaped)."""
    return f"[{text}]({url(target)})" if target else text


def short(path: str, width: int = PATH_WIDTH) -> str:
    return "..." + path[len(path) - width :] if len(path) > width else path
