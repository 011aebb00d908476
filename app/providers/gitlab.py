"""GitLab (gitlab.com and self-managed) over its REST API v4.

A project is named by its full path (``group/subgroup/project``), URL-encoded
as one path segment, so subgroups need no lookup. The endpoints are the ones
Codecov's worker uses (its ``torngit/gitlab.py``): merge requests of a
commit, a merge request, ``repository/compare``, ``repository/files/.../raw``,
``statuses/{sha}`` and the merge request's notes. ``COVWORKER_GITLAB_TOKEN``
is a personal, group or project access token with the ``api`` scope, sent
as ``PRIVATE-TOKEN``.
"""

from __future__ import annotations

import urllib.parse
from typing import Any

from app.providers.base import (
    Diff,
    DiffFile,
    ProviderResponseInvalid,
    PullRequest,
    RepositoryFacts,
    Status,
)
from app.providers.budget import CallBudget
from app.providers.http import ProviderHttp, json_list, json_object
from app.providers.rest import RestProvider, Route, branch_of, file_segments

DEFAULT_API_URL = "https://gitlab.com/api/v4"
#: GitLab's commit status states for covworker's (GitHub's) ones.
STATE = {"pending": "pending", "success": "success", "failure": "failed", "error": "failed"}
#: GitLab's merge request states in covworker's words.
MR_STATE = {"opened": "open", "closed": "closed", "merged": "merged", "locked": "open"}
DESCRIPTION_LIMIT = 255
#: GitLab's Reporter access level: the least that reads a private project's code.
REPORTER = 20


class GitLab(RestProvider):
    """GitLab's REST API v4 as a :class:`app.providers.base.Provider`."""

    service = "gitlab"
    comment_update_method = "PUT"

    def __init__(self, http: ProviderHttp, token: str, budget: CallBudget | None = None) -> None:
        super().__init__(http, budget)
        self._token = token

    @staticmethod
    def commit_unknown(status: int, message: str) -> bool:
        # 404 "404 Commit Not Found" (a commit's merge requests, a file at a ref).
        return status == 404 and "commit not found" in message.lower()

    def _route(self, repo: str) -> Route:
        headers = {"PRIVATE-TOKEN": self._token, "Accept": "application/json"}
        return Route(f"/projects/{project_id(repo)}", headers, "token")

    def _facts(self, payload: dict[str, Any]) -> RepositoryFacts:
        return project_facts(payload)

    def pull_for_commit(self, repo: str, sha: str) -> PullRequest | None:
        # [] when there is none: a 404 is the project (or commit) out of reach.
        response = self._call(
            "GET", f"/repository/commits/{sha}/merge_requests", repo, "pull", sha=sha
        )
        assert response is not None
        found = [m for m in json_list(response) if MR_STATE.get(str(m.get("state"))) == "open"]
        found.sort(key=lambda m: m.get("sha") != sha)  # the one whose head is sha first
        if not found:
            return None
        # The list leaves out diff_refs (the base commit): read the merge request itself.
        return self.pull(repo, int(found[0]["iid"]))

    def pull(self, repo: str, number: int) -> PullRequest | None:
        response = self._call("GET", f"/merge_requests/{number}", repo, "pull", missing_ok=True)
        return None if response is None else _merge_request(json_object(response))

    def compare(self, repo: str, base: str, head: str, *, pull: int | None = None) -> Diff:
        # GitLab's comparison is not cut at a file count: ``pull`` is not needed.
        response = self._call(
            "GET",
            "/repository/compare",
            repo,
            "compare",
            sha=head,
            params={"from": base, "to": head, "straight": "false"},
        )
        assert response is not None
        payload = json_object(response)
        files = []
        for d in payload.get("diffs") or []:
            status = (
                "added"
                if d.get("new_file")
                else "removed"
                if d.get("deleted_file")
                else "renamed"
                if d.get("renamed_file")
                else "modified"
            )
            files.append(
                DiffFile(
                    path=str(d["new_path"]),
                    status=status,
                    previous_path=str(d["old_path"]) if status == "renamed" else None,
                    # GitLab gives "" for a file without changed lines (an empty
                    # file added) and leaves the diff out of a too large or
                    # collapsed one
                    patch=None
                    if d.get("too_large") or d.get("collapsed")
                    else str(d.get("diff") or ""),
                )
            )
        return Diff(
            base_sha=base,
            head_sha=head,
            files=tuple(files),
            truncated=bool(payload.get("compare_timeout")),
        )

    def file_contents(
        self, repo: str, path: str, ref: str, *, max_bytes: int | None = None
    ) -> bytes | None:
        quoted = urllib.parse.quote("/".join(file_segments(path)), safe="")
        response = self._call(
            "GET",
            f"/repository/files/{quoted}/raw",
            repo,
            "contents",
            missing_ok=True,
            sha=ref,
            params={"ref": ref},
            max_bytes=max_bytes,
        )
        return None if response is None else response.content

    def _status_body(self, status: Status) -> dict[str, str]:
        return {
            "state": STATE[status.state],
            "name": status.context,
            "description": status.description[:DESCRIPTION_LIMIT],
        }

    def _comments_path(self, number: int) -> str:
        return f"/merge_requests/{number}/notes"

    def _comment_path(self, number: int, comment_id: int) -> str:
        return f"/merge_requests/{number}/notes/{comment_id}"


def project_facts(payload: dict[str, Any]) -> RepositoryFacts:
    """``GET /projects/{id}`` read: private unless ``visibility`` is ``public``
    (an ``internal`` project is for signed-in users only); readable by a
    user's token when the project is public or internal, or the user is a
    Reporter or above in it or its group (``permissions``)."""
    visibility = payload.get("visibility")
    if visibility not in ("public", "internal", "private"):
        raise ProviderResponseInvalid(f"the project's visibility {visibility!r} is unknown")
    levels = [0]
    permissions = payload.get("permissions")
    if isinstance(permissions, dict):
        for access in (permissions.get("project_access"), permissions.get("group_access")):
            if isinstance(access, dict) and isinstance(access.get("access_level"), int):
                levels.append(access["access_level"])
    readable = visibility != "private" or max(levels) >= REPORTER
    return RepositoryFacts(branch_of(payload), visibility != "public", readable)


def project_id(repo: str) -> str:
    """The project's full path as GitLab takes it in place of an id (subgroups included)."""
    if "/" not in repo.strip("/"):
        raise ProviderResponseInvalid(f"{repo!r} is not a GitLab GROUP/.../PROJECT")
    return urllib.parse.quote(repo.strip("/"), safe="")


def _merge_request(m: dict[str, Any]) -> PullRequest:
    try:
        refs = m.get("diff_refs") or {}
        return PullRequest(
            number=int(m["iid"]),
            base_sha=str(refs.get("base_sha") or ""),
            base_branch=str(m["target_branch"]),
            head_sha=str(refs.get("head_sha") or m.get("sha") or ""),
            head_branch=str(m["source_branch"]),
            state=MR_STATE.get(str(m.get("state")), str(m.get("state"))),
            url=str(m.get("web_url") or ""),
            title=str(m.get("title") or ""),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ProviderResponseInvalid(f"merge request unreadable: {exc!r}") from exc
