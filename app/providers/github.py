"""GitHub (github.com and GitHub Enterprise Server) over its REST API.

The endpoints are the ones Codecov's worker uses (its ``torngit/github.py``):
``commits/{sha}/pulls``, ``pulls/{n}``, ``compare/{base}...{head}``,
``contents/{path}``, ``statuses/{sha}`` and the issue comments of a pull
request. ``COVWORKER_GITHUB_API_URL`` is ``https://api.github.com`` or a
GitHub Enterprise Server's ``https://HOST/api/v3``.

Two ways to authenticate:

- a token (``COVWORKER_GITHUB_TOKEN``): a fine-grained or classic personal
  access token, or any token GitHub accepts as ``Bearer``;
- a GitHub App (``COVWORKER_GITHUB_APP_ID`` and the path of its private key):
  an RS256 JWT signed with the key is exchanged for an installation token of
  the repository's installation; the token is cached until five minutes
  before it expires, so one settled version costs no extra calls.
"""

from __future__ import annotations

import base64
import threading
import time
import urllib.parse
from collections.abc import Callable
from datetime import datetime
from typing import Any

from app.providers.base import (
    ContentTooLarge,
    Diff,
    DiffFile,
    ProviderResponseInvalid,
    PullRequest,
    RepositoryFacts,
    Status,
)
from app.providers.budget import CallBudget
from app.providers.http import ProviderHttp, json_list, json_object, paged
from app.providers.rest import RestProvider, Route, branch_of, quote_path

DEFAULT_API_URL = "https://api.github.com"
API_VERSION = "2022-11-28"
#: GitHub lists at most this many files in a comparison.
COMPARE_FILE_LIMIT = 300
#: ... and at most this many in a pull request's file list, read this many a page.
PULL_FILE_LIMIT = 3000
PULL_FILES_PER_PAGE = 100
#: A commit status's description is cut by GitHub past this.
DESCRIPTION_LIMIT = 140
#: An installation token is renewed this long before it expires.
TOKEN_RENEW_MARGIN_S = 300.0
#: Lifetime of the App's JWT (GitHub allows at most 10 minutes), and its clock-skew margin.
JWT_LIFETIME_S = 540
JWT_BACKDATE_S = 60


class TokenAuth:
    """A fixed token."""

    def __init__(self, token: str) -> None:
        self._token = token

    def headers(self, http: ProviderHttp, repo: str) -> tuple[dict[str, str], str]:
        return {"Authorization": f"Bearer {self._token}"}, "token"


class AppAuth:
    """A GitHub App: a JWT for the App, an installation token per repository."""

    def __init__(
        self, app_id: str, private_key: str, *, clock: Callable[[], float] = time.time
    ) -> None:
        self.app_id = app_id
        self._key = private_key
        self._clock = clock
        self._lock = threading.Lock()
        self._installations: dict[str, int] = {}  # repo -> installation id
        self._tokens: dict[int, tuple[str, float]] = {}  # installation -> (token, expires)

    def app_jwt(self) -> str:
        import jwt  # with ``cryptography``, 15 MiB a token-authenticated worker never needs

        now = int(self._clock())
        claims = {"iat": now - JWT_BACKDATE_S, "exp": now + JWT_LIFETIME_S, "iss": self.app_id}
        return jwt.encode(claims, self._key, algorithm="RS256")

    def headers(self, http: ProviderHttp, repo: str) -> tuple[dict[str, str], str]:
        installation = self._installation(http, repo)
        with self._lock:
            cached = self._tokens.get(installation)
        if cached is None or cached[1] - TOKEN_RENEW_MARGIN_S <= self._clock():
            cached = self._new_token(http, repo, installation)
            with self._lock:
                self._tokens[installation] = cached
        return {"Authorization": f"Bearer {cached[0]}"}, f"installation:{installation}"

    def _as_app(
        self, http: ProviderHttp, method: str, path: str, repo: str, kind: str = "installation"
    ) -> dict[str, Any]:
        """A call signed by the App itself (its JWT), not by an installation."""
        response = http.request(
            method,
            path,
            kind=kind,
            headers={**_ACCEPT, "Authorization": f"Bearer {self.app_jwt()}"},
            credential=f"app:{self.app_id}",
            repo=repo,
        )
        assert response is not None
        return json_object(response)

    def _installation(self, http: ProviderHttp, repo: str) -> int:
        with self._lock:
            found = self._installations.get(repo)
        if found is not None:
            return found
        answer = self._as_app(http, "GET", f"/repos/{_repo_path(repo)}/installation", repo)
        installation = int(answer["id"])
        with self._lock:
            self._installations[repo] = installation
        return installation

    def _new_token(self, http: ProviderHttp, repo: str, installation: int) -> tuple[str, float]:
        path = f"/app/installations/{installation}/access_tokens"
        payload = self._as_app(http, "POST", path, repo, kind="installation_token")
        try:
            expires = datetime.fromisoformat(str(payload["expires_at"]).replace("Z", "+00:00"))
            return str(payload["token"]), expires.timestamp()
        except (KeyError, ValueError) as exc:
            raise ProviderResponseInvalid(f"installation token answer unreadable: {exc}") from exc


_ACCEPT = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": API_VERSION}


class GitHub(RestProvider):
    """GitHub's REST API as a :class:`app.providers.base.Provider`."""

    service = "github"
    comment_update_method = "PATCH"

    def __init__(
        self, http: ProviderHttp, auth: TokenAuth | AppAuth, budget: CallBudget | None = None
    ) -> None:
        super().__init__(http, budget)
        self.auth = auth

    @staticmethod
    def commit_unknown(status: int, message: str) -> bool:
        # 422 "No commit found for SHA: ..." (a commit's pull requests, a
        # status), 404 "No commit found for the ref ..." (a file at a ref).
        return status in (404, 422) and message.lower().startswith("no commit found")

    def _route(self, repo: str) -> Route:
        auth, credential = self.auth.headers(self.http, repo)
        return Route(f"/repos/{_repo_path(repo)}", {**_ACCEPT, **auth}, credential)

    def _facts(self, payload: dict[str, Any]) -> RepositoryFacts:
        return repository_facts(payload)

    def pull_for_commit(self, repo: str, sha: str) -> PullRequest | None:
        # A commit without pull requests is [], so a 404 here is the repository
        # out of reach: AccessDenied, recorded, rather than "no pull request".
        response = self._call("GET", f"/commits/{sha}/pulls", repo, "pull", sha=sha)
        assert response is not None
        pulls = [_pull(p) for p in json_list(response)]
        open_pulls = [p for p in pulls if p.state == "open"]
        for p in open_pulls:
            if p.head_sha == sha:
                return p
        return open_pulls[0] if open_pulls else None

    def pull(self, repo: str, number: int) -> PullRequest | None:
        response = self._call("GET", f"/pulls/{number}", repo, "pull", missing_ok=True)
        return None if response is None else _pull(json_object(response))

    def compare(self, repo: str, base: str, head: str, *, pull: int | None = None) -> Diff:
        """``compare/{base}...{head}``; past its 300 files, the pull request's file list.

        GitHub's comparison names at most 300 files. When it is cut there and
        the pull request of this base and head is known, its file list
        (``pulls/{n}/files``, 100 a page, up to GitHub's 3,000) is read
        instead, so files past the 300th are measured rather than dropped.
        """
        response = self._call("GET", f"/compare/{base}...{head}", repo, "compare", sha=head)
        assert response is not None
        files = [_diff_file(f) for f in json_object(response).get("files") or []]
        if len(files) >= COMPARE_FILE_LIMIT and pull is not None:
            files = self._pull_files(repo, pull)
            return Diff(base, head, tuple(files), truncated=len(files) >= PULL_FILE_LIMIT)
        return Diff(base, head, tuple(files), truncated=len(files) >= COMPARE_FILE_LIMIT)

    def _pull_files(self, repo: str, number: int) -> list[DiffFile]:
        def page(params: dict[str, int]) -> list[DiffFile]:
            response = self._call("GET", f"/pulls/{number}/files", repo, "compare", params=params)
            assert response is not None
            return [_diff_file(f) for f in json_list(response)]

        return paged(page, per_page=PULL_FILES_PER_PAGE, max_items=PULL_FILE_LIMIT)

    def file_contents(
        self, repo: str, path: str, ref: str, *, max_bytes: int | None = None
    ) -> bytes | None:
        quoted = quote_path(path)
        response = self._call(
            "GET",
            f"/contents/{quoted}",
            repo,
            "contents",
            missing_ok=True,
            sha=ref,
            params={"ref": ref},
            max_bytes=None if max_bytes is None else _json_bound(max_bytes),
        )
        if response is None:
            return None
        payload = response.json()
        if not isinstance(payload, dict) or payload.get("type") != "file":
            return None  # a directory or a submodule
        size = payload.get("size")
        if max_bytes is not None and isinstance(size, int) and size > max_bytes:
            message = f"{path[:200]} is {size} bytes, over the limit of {max_bytes}"
            raise ContentTooLarge(message, max_bytes)
        if payload.get("encoding") == "base64" and payload.get("content") is not None:
            return base64.b64decode(str(payload["content"]))
        # Files over 1 MB come without content: ask for the raw bytes.
        raw = self._call(
            "GET",
            f"/contents/{quoted}",
            repo,
            "contents",
            missing_ok=True,
            accept="application/vnd.github.raw+json",
            sha=ref,
            params={"ref": ref},
            max_bytes=max_bytes,
        )
        return None if raw is None else raw.content

    def _status_body(self, status: Status) -> dict[str, str]:
        return {
            "state": status.state,
            "description": status.description[:DESCRIPTION_LIMIT],
            "context": status.context,
        }

    def _comments_path(self, number: int) -> str:
        return f"/issues/{number}/comments"

    def _comment_path(self, number: int, comment_id: int) -> str:
        # A pull request's comments are its issue's: their ids stand alone.
        return f"/issues/comments/{comment_id}"


def _json_bound(max_bytes: int) -> int:
    """Most bytes of the contents API's JSON for a file of ``max_bytes``: its
    base64 (4 characters per 3 bytes, a newline every 60) and the entry's
    other fields (names, paths, links)."""
    return max_bytes * 4 // 3 * 61 // 60 + 64 * 1024


def repository_facts(payload: dict[str, Any]) -> RepositoryFacts:
    """``GET /repos/{owner}/{repo}`` read: ``private`` (a boolean GitHub always
    sends; anything else is unreadable, never "public"), and ``permissions.pull``,
    which GitHub sends when a user's token asks."""
    private = payload.get("private")
    if not isinstance(private, bool):
        raise ProviderResponseInvalid("the repository's 'private' is not a boolean")
    permissions = payload.get("permissions")
    readable = permissions.get("pull") is True if isinstance(permissions, dict) else not private
    return RepositoryFacts(branch_of(payload), private, readable)


def repo_path(repo: str) -> str:
    """``OWNER/NAME`` as the two segments of ``/repos/{owner}/{repo}``."""
    return _repo_path(repo)


def _repo_path(repo: str) -> str:
    owner, _, name = repo.partition("/")
    if not owner or not name or "/" in name:
        raise ProviderResponseInvalid(f"{repo!r} is not a GitHub OWNER/NAME")
    return f"{urllib.parse.quote(owner, safe='')}/{urllib.parse.quote(name, safe='')}"


def _diff_file(f: dict[str, Any]) -> DiffFile:
    try:
        return DiffFile(
            path=str(f["filename"]),
            status=str(f.get("status") or "modified"),
            previous_path=f.get("previous_filename"),
            patch=f.get("patch"),
            changes=f["changes"] if isinstance(f.get("changes"), int) else None,
        )
    except KeyError as exc:
        raise ProviderResponseInvalid(f"diff entry unreadable: {exc!r}") from exc


def _pull(p: dict[str, Any]) -> PullRequest:
    try:
        state = "merged" if p.get("merged_at") else str(p["state"])
        return PullRequest(
            number=int(p["number"]),
            base_sha=str(p["base"]["sha"]),
            base_branch=str(p["base"]["ref"]),
            head_sha=str(p["head"]["sha"]),
            head_branch=str(p["head"]["ref"]),
            state=state,
            url=str(p.get("html_url") or ""),
            title=str(p.get("title") or ""),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ProviderResponseInvalid(f"pull request unreadable: {exc!r}") from exc
