"""What GitHub and GitLab do the same way over REST.

Every call is one request below the repository's path with the
provider's credentials; a commit status is one POST to ``statuses/{sha}``;
a pull request's comment is created, edited and deleted under one path per
comment. Only the paths, the credentials, the status's field names and the
method that edits differ: :class:`RestProvider` makes the calls once, and
``github.py`` and ``gitlab.py`` name what differs.
"""

from __future__ import annotations

import urllib.parse
from abc import ABC, abstractmethod
from typing import Any, NamedTuple

import httpx

from app.providers.base import ProviderRejected, RepositoryFacts, Status, UnknownCommit
from app.providers.budget import CallBudget, unknown_reason
from app.providers.http import ProviderHttp, json_object

#: Segments an HTTP client folds (RFC 3986 dot-segments): below the
#: repository's path they could climb out of it.
_DOT_SEGMENTS = frozenset({".", ".."})


def below_repository(path: str) -> str:
    """``path`` if it stays below the repository's path, else ProviderRejected.

    Any part of ``path`` can come from an upload (a report's file path): a
    ``.`` or ``..`` segment, raw or percent-encoded, would be folded by the
    HTTP client and reach another repository with this one's credentials."""
    decoded = urllib.parse.unquote(path.split("?", 1)[0]).replace("\\", "/")
    if any(piece in _DOT_SEGMENTS for piece in decoded.split("/")):
        raise ProviderRejected(f"path leaves the repository: {path[:200]!r}")
    return path


def file_segments(path: str) -> list[str]:
    """A repository file's path as its segments; ProviderRejected if one is
    empty, ``.`` or ``..`` (nothing to fold: such a path names no file of
    the repository, and folded it could name another repository's)."""
    segments = path.lstrip("/").split("/")
    if any(segment in _DOT_SEGMENTS or not segment for segment in segments):
        raise ProviderRejected(f"not a file path of the repository: {path[:200]!r}")
    return segments


def quote_path(path: str) -> str:
    """A repository file's path as URL segments: each one percent-encoded
    whole, so nothing in a name is read as a separator or a dot-segment."""
    return "/".join(urllib.parse.quote(segment, safe="") for segment in file_segments(path))


def branch_of(payload: dict[str, Any]) -> str | None:
    """GitHub's repository and GitLab's project both name it ``default_branch``
    (null for a GitLab project without commits)."""
    branch = payload.get("default_branch")
    return branch if isinstance(branch, str) and branch else None


class Route(NamedTuple):
    """How to reach one repository's endpoints."""

    #: The repository's path below the API root (``/repos/OWNER/NAME``).
    prefix: str
    #: Authorization and ``Accept`` headers.
    headers: dict[str, str]
    #: The key of the credentials' rate-limit block (see :class:`ProviderHttp`).
    credential: str


class RestProvider(ABC):
    """A provider's calls below a repository, and its commit status and comment writes."""

    #: ``github`` or ``gitlab``.
    service: str
    #: The HTTP method that edits a comment in place.
    comment_update_method: str

    def __init__(self, http: ProviderHttp, budget: CallBudget | None = None) -> None:
        self.http = http
        #: The per-repository budget and unknown commits (None: neither, as in
        #: a test that builds a provider alone).
        self.budget = budget

    def close(self) -> None:
        self.http.close()

    @abstractmethod
    def _route(self, repo: str) -> Route:
        """Where the repository's endpoints are, and the credentials to call them with."""

    @staticmethod
    def commit_unknown(status: int, message: str) -> bool:
        """Whether an answer says the provider has no such commit (not that a
        file or pull request is missing): each provider says it in its own
        words (``github.py``, ``gitlab.py``); here, never."""
        return False

    def _call(
        self,
        method: str,
        path: str,
        repo: str,
        kind: str,
        *,
        missing_ok: bool = False,
        accept: str | None = None,
        sha: str | None = None,
        **kwargs: Any,
    ) -> httpx.Response | None:
        """One call on ``path`` below the repository; ``accept`` replaces the usual
        ``Accept`` (GitHub's raw file contents). ``sha``: the commit the call is
        about; none is made for one the provider said it does not know.

        Each call made is one of the repository's budget (:mod:`app.providers.budget`).
        """
        below_repository(path)
        budget = self.budget
        if budget is not None:
            if sha is not None:
                budget.check_commit(self.service, repo, sha)
            budget.spend(self.service, repo)
        route = self._route(repo)
        headers = dict(route.headers)
        if accept:
            headers["Accept"] = accept
        try:
            return self.http.request(
                method,
                route.prefix + path,
                kind=kind,
                headers=headers,
                credential=route.credential,
                repo=repo,
                missing_ok=missing_ok,
                sha=sha,
                commit_unknown=self.commit_unknown,
                **kwargs,
            )
        except UnknownCommit as exc:
            if budget is not None:
                budget.remember_unknown(self.service, repo, exc.sha)
                ttl = budget.unknown_commit_ttl_s
            else:
                ttl = None
            raise UnknownCommit(unknown_reason(self.service, repo, exc.sha, ttl), exc.sha) from exc

    @abstractmethod
    def _status_body(self, status: Status) -> dict[str, str]:
        """The status in the provider's field names, without its ``target_url``."""

    @abstractmethod
    def _comments_path(self, number: int) -> str:
        """Where pull request ``number``'s comments are created."""

    @abstractmethod
    def _comment_path(self, number: int, comment_id: int) -> str:
        """Where one comment of pull request ``number`` is edited and deleted."""

    @abstractmethod
    def _facts(self, payload: dict[str, Any]) -> RepositoryFacts:
        """The provider's repository (project) object read."""

    def repository(self, repo: str) -> RepositoryFacts:
        response = self._call("GET", "", repo, "repository")
        assert response is not None
        return self._facts(json_object(response))

    def default_branch(self, repo: str) -> str | None:
        return self.repository(repo).default_branch

    def set_status(self, repo: str, sha: str, status: Status) -> None:
        body = self._status_body(status)
        if status.target_url:
            body["target_url"] = status.target_url
        self._call("POST", f"/statuses/{sha}", repo, "status", sha=sha, json=body)

    def create_comment(self, repo: str, number: int, body: str) -> int:
        response = self._call(
            "POST", self._comments_path(number), repo, "comment", json={"body": body}
        )
        assert response is not None
        return int(json_object(response)["id"])

    def update_comment(self, repo: str, number: int, comment_id: int, body: str) -> bool:
        response = self._call(
            self.comment_update_method,
            self._comment_path(number, comment_id),
            repo,
            "comment",
            missing_ok=True,
            json={"body": body},
        )
        return response is not None

    def delete_comment(self, repo: str, number: int, comment_id: int) -> None:
        path = self._comment_path(number, comment_id)
        self._call("DELETE", path, repo, "comment", missing_ok=True)
