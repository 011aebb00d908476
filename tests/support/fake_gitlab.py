"""A fake GitLab REST API v4 for the tests (behind Prism, like the fake GitHub).

Same server and state as :class:`tests.support.fake_github.FakeGitHub`
(merge requests are its pulls, notes its comments); the routes and the
answers are GitLab's, as ``openapi/gitlab.yaml`` describes them from
GitLab's API documentation.
"""

from __future__ import annotations

import re
import time
import urllib.parse
from pathlib import Path
from typing import Any

from tests.support.fake_github import FakeGitHub, FakePull

GITLAB_SPEC = Path(__file__).with_name("openapi") / "gitlab.yaml"
NOW = "2026-01-01T00:00:00.000Z"


class FakeGitLab(FakeGitHub):
    """GitLab's routes on the fake's server (``/projects/{url-encoded path}/...``)."""

    def _route(self, method: str, path: str, params: dict[str, str], body: Any) -> tuple[int, Any]:
        not_found = {"message": "404 Not found"}
        m = re.fullmatch(r"/projects/([^/]+)(/.*)?", path)
        if not m:
            return 404, not_found
        repo, rest = urllib.parse.unquote(m[1]), m[2] or ""
        if repo in self.state.forbidden:
            return 404, {"message": "404 Project Not Found"}
        if rest == "" and method == "GET":
            with self.lock:
                branch = self.state.default_branches.get(repo, "main")
            return 200, {
                "id": 42,
                "path_with_namespace": repo,
                "default_branch": branch,
                "web_url": f"https://gitlab.example/{repo}",
                "visibility": "private" if repo in self.state.private else "public",
            }
        if (m := re.fullmatch(r"/repository/commits/([0-9a-f]+)/merge_requests", rest)) and (
            method == "GET"
        ):
            with self.lock:
                found = [p for (r, _), p in self.state.pulls.items() if r == repo]
            return 200, [self._mr(repo, p) for p in found if p.head_sha == m[1]]
        if (m := re.fullmatch(r"/merge_requests/(\d+)", rest)) and method == "GET":
            with self.lock:
                pull = self.state.pulls.get((repo, int(m[1])))
            if pull is None:
                return 404, not_found
            mr = self._mr(repo, pull)
            mr["diff_refs"] = {
                "base_sha": pull.base_sha,
                "head_sha": pull.head_sha,
                "start_sha": pull.base_sha,
            }
            return 200, mr
        if rest == "/repository/compare" and method == "GET":
            with self.lock:
                files = self.state.diffs.get((repo, params.get("from", ""), params.get("to", "")))
            if files is None:
                return 404, not_found
            diffs = [
                {
                    "old_path": name,
                    "new_path": name,
                    "a_mode": None if status == "added" else "100644",
                    "b_mode": "100644",
                    "diff": patch or "",
                    "new_file": status == "added",
                    "renamed_file": False,
                    "deleted_file": status == "removed",
                    "too_large": patch is None,
                    "collapsed": False,
                }
                for name, status, patch in files
            ]
            return 200, {
                "commit": None,
                "commits": [],
                "diffs": diffs,
                "compare_timeout": False,
                "compare_same_ref": False,
            }
        if (m := re.fullmatch(r"/repository/files/([^/]+)/raw", rest)) and method == "GET":
            file_path = urllib.parse.unquote(m[1])
            with self.lock:
                content = self.state.files.get((repo, params.get("ref", ""), file_path))
            return (
                (200, content) if content is not None else (404, {"message": "404 File Not Found"})
            )
        if (m := re.fullmatch(r"/statuses/([0-9a-f]+)", rest)) and method == "POST":
            with self.lock:
                self.state.statuses.setdefault((repo, m[1]), []).append(dict(body))
                number = sum(len(v) for v in self.state.statuses.values())
            return 201, {
                "id": number,
                "sha": m[1],
                "ref": None,
                "status": body["state"],
                "name": body.get("name", "default"),
                "target_url": body.get("target_url"),
                "description": body.get("description"),
                "created_at": NOW,
                "coverage": None,
            }
        if (m := re.fullmatch(r"/merge_requests/(\d+)/notes", rest)) and method == "POST":
            note_id = next(self._ids)
            with self.lock:
                self.state.comments[note_id] = (repo, int(m[1]), body["body"])
            return 201, self._note(note_id, int(m[1]), body["body"])
        if m := re.fullmatch(r"/merge_requests/(\d+)/notes/(\d+)", rest):
            note_id, iid = int(m[2]), int(m[1])
            with self.lock:
                existing = self.state.comments.get(note_id)
                if existing is None or existing[:2] != (repo, iid):
                    return 404, {"message": "404 Note Not Found"}
                if method == "DELETE":
                    del self.state.comments[note_id]
                    return 204, None
                self.state.comments[note_id] = (repo, iid, body["body"])
            return 200, self._note(note_id, iid, body["body"])
        return 404, not_found

    def _send(
        self, h: Any, status: int, payload: Any, headers: dict[str, str] | None = None
    ) -> None:
        if isinstance(payload, bytes):  # a raw file
            h.send_response(status)
            h.send_header("Content-Type", "text/plain; charset=utf-8")
            h.send_header("Content-Length", str(len(payload)))
            h.end_headers()
            h.wfile.write(payload)
            return
        super()._send(h, status, payload, headers)

    def _mr(self, repo: str, pull: FakePull) -> dict[str, Any]:
        state = {"open": "opened", "closed": "closed", "merged": "merged"}[pull.state]
        return {
            "id": 1000 + pull.number,
            "iid": pull.number,
            "project_id": 42,
            "title": f"Merge request {pull.number}",
            "state": state,
            "source_branch": pull.head_branch,
            "target_branch": pull.base_branch,
            "sha": pull.head_sha,
            "web_url": f"https://gitlab.example/{repo}/-/merge_requests/{pull.number}",
        }

    def _note(self, note_id: int, iid: int, body: str) -> dict[str, Any]:
        return {
            "id": note_id,
            "body": body,
            "noteable_type": "MergeRequest",
            "noteable_iid": iid,
            "system": False,
            "created_at": NOW,
            "updated_at": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
        }
