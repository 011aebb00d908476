"""Provider events as GitHub and GitLab post them, with the test's values put in.

The bodies are the providers' own examples (tests/fixtures/provider_events,
GitHub's from ``@octokit/webhooks-examples``), changed only where a test
names its repository, pull request, branches and SHAs.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

from tests.support.paths import FIXTURES

EVENTS = FIXTURES / "provider_events"


def github_pull_event(
    action: str,
    repo: str,
    number: int,
    *,
    base: tuple[str, str],
    head: tuple[str, str],
    default_branch: str = "main",
    changes: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A ``pull_request`` event; ``base`` and ``head`` are (branch, sha)."""
    example = "opened" if action == "edited" else action
    body: dict[str, Any] = json.loads((EVENTS / f"github-pull_request-{example}.json").read_text())
    body["action"] = action
    owner, name = repo.split("/")
    for where in (body["repository"], body["pull_request"]["base"]["repo"]):
        where.update(full_name=repo, name=name, default_branch=default_branch)
        where["owner"]["login"] = owner
    pull = body["pull_request"]
    pull.update(number=number, html_url=f"https://github.com/{repo}/pull/{number}")
    body["number"] = number
    pull["base"].update(ref=base[0], sha=base[1])
    pull["head"].update(ref=head[0], sha=head[1])
    if changes is not None:
        body["changes"] = changes
    return body


def gitlab_merge_request_event(
    action: str,
    project: str,
    iid: int,
    *,
    target_branch: str,
    source_branch: str,
    head_sha: str,
    default_branch: str = "main",
    changes: dict[str, Any] | None = None,
    oldrev: str | None = None,
) -> dict[str, Any]:
    """A merge request hook (``open``, ``reopen``, ``update``)."""
    body: dict[str, Any] = json.loads((EVENTS / "gitlab-merge_request-open.json").read_text())
    body["project"].update(path_with_namespace=project, default_branch=default_branch)
    mr = body["object_attributes"]
    mr.update(
        iid=iid,
        action=action,
        target_branch=target_branch,
        source_branch=source_branch,
        url=f"https://gitlab.example/{project}/-/merge_requests/{iid}",
    )
    mr["last_commit"]["id"] = head_sha
    if oldrev is not None:
        mr["oldrev"] = oldrev
    body["changes"] = changes or {}
    return body


def github_headers(body: bytes, secret: str, event: str = "pull_request") -> dict[str, str]:
    """The headers GitHub sends with ``body``, signed with ``secret``."""
    signature = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return {
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958",
        "X-Hub-Signature-256": f"sha256={signature}",
        "Content-Type": "application/json",
        "User-Agent": "GitHub-Hookshot/044aadd",
    }


def gitlab_headers(token: str, event: str = "Merge Request Hook") -> dict[str, str]:
    return {"X-Gitlab-Event": event, "X-Gitlab-Token": token, "Content-Type": "application/json"}
