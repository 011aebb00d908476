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

import httpx

from app.providers.base import Diff, DiffFile, ProviderResponseInvalid, PullRequest, Status
from app.providers.http import ProviderHttp, json_list, json_object

DEFAULT_API_URL = "https://gitlab.com/api/v4"
#: GitLab's commit status states for covworker's (GitHub's) ones.
STATE = {"pending": "pending", "success": "success", "failure": "failed", "error": "failed"}
#: GitLab's merge request states in covworker's words.
MR_STATE = {"opened": "open", "closed": "closed", "merged": "merged", "locked": "open"}
DESCRIPTION_LIMIT = 255


class GitLab:
    """GitLab's REST API v4 as a :class:`app.providers.base.Provider`."""

    service = "gitlab"

    def __init__(self, http: ProviderHttp, token: str) -> None:
        self.http = http
        self._token = token

    def close(self) -> None:
        self.http.close()

    def _call(
        self,
        method: str,
        path: str,
        repo: str,
        kind: str,
        *,
        missing_ok: bool = False,
        **kwargs: Any,
    ) -> httpx.Response | None:
        return self.http.request(
            method,
            f"/projects/{project_id(repo)}{path}",
            kind=kind,
            headers={"PRIVATE-TOKEN": self._token, "Accept": "application/json"},
            credential="token",
            repo=repo,
            missing_ok=missing_ok,
            **kwargs,
        )

    def pull_for_commit(self, repo: str, sha: str) -> PullRequest | None:
        # [] when there is none: a 404 is the project (or commit) out of reach.
        response = self._call("GET", f"/repository/commits/{sha}/merge_requests", repo, "pull")
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
                    patch=(d.get("diff") or None) if not d.get("too_large") else None,
                )
            )
        return Diff(
            base_sha=base,
            head_sha=head,
            files=tuple(files),
            truncated=bool(payload.get("compare_timeout")),
        )

    def file_contents(self, repo: str, path: str, ref: str) -> bytes | None:
        quoted = urllib.parse.quote(path.lstrip("/"), safe="")
        response = self._call(
            "GET",
            f"/repository/files/{quoted}/raw",
            repo,
            "contents",
            missing_ok=True,
            params={"ref": ref},
        )
        return None if response is None else response.content

    def set_status(self, repo: str, sha: str, status: Status) -> None:
        body = {
            "state": STATE[status.state],
            "name": status.context,
            "description": status.description[:DESCRIPTION_LIMIT],
        }
        if status.target_url:
            body["target_url"] = status.target_url
        self._call("POST", f"/statuses/{sha}", repo, "status", json=body)

    def create_comment(self, repo: str, number: int, body: str) -> int:
        response = self._call(
            "POST", f"/merge_requests/{number}/notes", repo, "comment", json={"body": body}
        )
        assert response is not None
        return int(json_object(response)["id"])

    def update_comment(self, repo: str, number: int, comment_id: int, body: str) -> bool:
        response = self._call(
            "PUT",
            f"/merge_requests/{number}/notes/{comment_id}",
            repo,
            "comment",
            missing_ok=True,
            json={"body": body},
        )
        return response is not None

    def delete_comment(self, repo: str, number: int, comment_id: int) -> None:
        self._call(
            "DELETE",
            f"/merge_requests/{number}/notes/{comment_id}",
            repo,
            "comment",
            missing_ok=True,
        )


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
