"""The pull-request comment, in Codecov's layout and wording.

Every string that comes from an upload or the repository (file paths, flag
names, branch names) goes through :func:`escape_markdown`, so it cannot
open a link, mention a user, or inject HTML.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from app.pullrequests.compare import Comparison
from app.pullrequests.config import CodecovConfig, ConfigError


@dataclass(frozen=True, slots=True)
class CommentLinks:
    """Where the comment's links go (covworker's pages and the provider's pull)."""

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


def escape_markdown(text: str) -> str:
    """``text`` as literal Markdown/HTML text: no links, mentions, images or tags."""
    raise NotImplementedError


def should_comment(
    config: CodecovConfig, comparison: Comparison, *, sessions: int, comment_exists: bool
) -> bool:
    """Codecov's gates: ``comment: false``, ``after_n_builds``, ``require_changes``
    (skipped once a comment exists), ``require_base``."""
    raise NotImplementedError


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
    raise NotImplementedError
