"""What covworker asks of a Git provider, whichever it is.

Pull-request feedback (``app/feedback/delivery.py``) and the pages need
seven things from GitHub or GitLab: the repository's default branch (and
whether it is private), the pull request of a commit, a pull request by
number, the diff between two commits, a file at a commit, a commit status,
and one comment on the pull request. :class:`Provider` is that interface;
``github.py`` and ``gitlab.py`` speak it over REST.

Failures are typed, because the caller does different things with them:

- :class:`ProviderUnavailable` (5xx, timeouts, refused connections) and
  :class:`RateLimited` (a primary or secondary rate limit) are transient:
  the outbox tries again later, outside any message's retry budget;
- :class:`OverBudget`: the repository spent its share of the calls
  (:mod:`app.providers.budget`); the outbox defers, without an attempt;
- :class:`UnknownCommit`: the provider has no such commit; its feedback is
  skipped with that reason;
- :class:`AccessDenied` (401/403/404 for the repository) will not fix
  itself: it is recorded on the commit for a person to see;
- :class:`ProviderResponseInvalid` is a provider that answered 2xx with
  something covworker cannot read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from app.errors import CovworkerError

#: Commit status states, in GitHub's words (GitLab's are mapped in gitlab.py).
STATUS_STATES = ("pending", "success", "failure", "error")


class ProviderError(CovworkerError):
    """A Git provider call failed."""


class ProviderUnavailable(ProviderError):
    """5xx, a timeout or no connection: worth trying again later."""


class RateLimited(ProviderError):
    """The provider asked us to wait ``retry_in_s`` seconds."""

    def __init__(self, message: str, retry_in_s: float) -> None:
        super().__init__(message)
        self.retry_in_s = retry_in_s


class OverBudget(RateLimited):
    """The repository spent its budget of provider calls (:mod:`app.providers.budget`):
    the call was not made; try after ``retry_in_s``. Not an attempt that failed."""


class UnknownCommit(ProviderError):
    """The provider has no such commit (it said so, now or within
    ``COVWORKER_PROVIDER_UNKNOWN_COMMIT_TTL_S``): the commit gets no feedback."""

    def __init__(self, message: str, sha: str) -> None:
        super().__init__(message)
        self.sha = sha


class AccessDenied(ProviderError):
    """401, 403 or 404 for the repository: credentials, permissions or a wrong name.

    Not retried on a schedule: it is recorded on the commit (``status``,
    the commit page, ``/-/ops``) until someone fixes the credentials.
    """

    def __init__(self, message: str, status_code: int) -> None:
        super().__init__(message)
        self.status_code = status_code


class ProviderRejected(ProviderError):
    """The provider refused the request itself (422 and other 4xx): not retried."""


class ProviderResponseInvalid(ProviderError):
    """A 2xx answer covworker cannot read."""


class ContentTooLarge(ProviderError):
    """An answer past the bound its reader set (``max_bytes``): read no
    further than the bound, and not kept."""

    def __init__(self, message: str, limit: int) -> None:
        super().__init__(message)
        self.limit = limit


@dataclass(frozen=True, slots=True)
class PullRequest:
    number: int
    #: The commit the pull request's diff is taken against.
    base_sha: str
    base_branch: str
    head_sha: str
    head_branch: str
    #: ``open``, ``closed`` or ``merged``.
    state: str
    #: The pull request's page on the provider.
    url: str
    title: str = ""


@dataclass(frozen=True, slots=True)
class RepositoryFacts:
    """What the provider says of a repository (GitHub's repository, GitLab's
    project), as seen by the credentials that asked."""

    #: The default branch; None if the provider names none.
    default_branch: str | None
    #: GitHub's ``private``; GitLab: a visibility other than ``public``.
    private: bool
    #: Whether the credentials may read its code (GitHub's ``permissions.pull``;
    #: GitLab: Reporter or above, or a public or internal project).
    readable: bool


@dataclass(frozen=True, slots=True)
class DiffFile:
    """One file of a diff, with its unified-diff hunks."""

    path: str
    #: ``added``, ``modified``, ``removed``, ``renamed``.
    status: str
    previous_path: str | None = None
    #: The ``@@`` hunks; None when the provider gave none: it left them out
    #: (binary or too large), or there are none (see :attr:`changes`).
    patch: str | None = None
    #: Lines added plus removed, as the provider counts them (GitHub's
    #: ``changes``); None when it does not say. A file without a patch and
    #: with 0 changes (an empty file added) had no patch to give.
    changes: int | None = None


@dataclass(frozen=True, slots=True)
class Diff:
    base_sha: str
    head_sha: str
    files: tuple[DiffFile, ...] = ()
    #: The provider listed only part of the files (GitHub's comparison stops
    #: at 300, a pull request's file list at 3,000).
    truncated: bool = False

    def unified(self) -> str:
        """The diff as ``git diff`` writes it, for a unified-diff parser.

        Files whose patch the provider left out appear with their header
        only, so a parser still sees that they changed.
        """
        parts: list[str] = []
        for f in self.files:
            old = f.previous_path or f.path
            parts.append(f"diff --git a/{old} b/{f.path}\n")
            if f.status == "added":
                parts.append("new file mode 100644\n--- /dev/null\n")
            elif f.status == "renamed" and f.previous_path:
                parts.append(f"rename from {old}\nrename to {f.path}\n--- a/{old}\n")
            else:
                parts.append(f"--- a/{old}\n")
            parts.append("+++ /dev/null\n" if f.status == "removed" else f"+++ b/{f.path}\n")
            if f.patch:
                parts.append(f.patch if f.patch.endswith("\n") else f.patch + "\n")
        return "".join(parts)


@dataclass(frozen=True, slots=True)
class Status:
    """A commit status as covworker sends it."""

    context: str
    state: str
    description: str
    target_url: str = ""

    def __post_init__(self) -> None:
        if self.state not in STATUS_STATES:
            raise ValueError(f"status state {self.state!r} is not one of {STATUS_STATES}")


@dataclass(slots=True)
class CallCounter:
    """Provider calls made, by kind (the benchmark's calls-per-version figure)."""

    counts: dict[str, int] = field(default_factory=dict)

    def add(self, kind: str) -> None:
        self.counts[kind] = self.counts.get(kind, 0) + 1


class Provider(Protocol):
    """A Git provider as covworker uses it. ``repo`` is the provider's ``OWNER/NAME``."""

    #: ``github`` or ``gitlab`` (a repository's ``service``).
    service: str

    def default_branch(self, repo: str) -> str | None:
        """The repository's default branch; None if the provider names none."""
        ...

    def repository(self, repo: str) -> RepositoryFacts:
        """The repository's default branch and whether it is private."""
        ...

    def pull_for_commit(self, repo: str, sha: str) -> PullRequest | None:
        """The open pull request whose head is ``sha``, if any."""
        ...

    def pull(self, repo: str, number: int) -> PullRequest | None:
        """Pull request ``number``; None if it does not exist."""
        ...

    def compare(self, repo: str, base: str, head: str, *, pull: int | None = None) -> Diff:
        """The diff from the merge base of ``base`` and ``head`` to ``head``.

        ``pull``: the pull request whose base and head these are, when known;
        a provider whose comparison lists only part of the files reads the
        rest from the pull request's own file list.
        """
        ...

    def file_contents(
        self, repo: str, path: str, ref: str, *, max_bytes: int | None = None
    ) -> bytes | None:
        """The file ``path`` at ``ref``; None if it is not there.

        ``max_bytes``: a larger file is :class:`ContentTooLarge`, and the
        provider's answer is read no further than about that many bytes."""
        ...

    def set_status(self, repo: str, sha: str, status: Status) -> None:
        """Create a commit status (the provider keeps the newest per context)."""
        ...

    def create_comment(self, repo: str, number: int, body: str) -> int:
        """Comment on the pull request; the comment's id (64-bit)."""
        ...

    def update_comment(self, repo: str, number: int, comment_id: int, body: str) -> bool:
        """Edit a comment in place; False if it is gone (deleted by someone)."""
        ...

    def delete_comment(self, repo: str, number: int, comment_id: int) -> None:
        """Delete a comment (gone already is fine)."""
        ...

    def close(self) -> None: ...
