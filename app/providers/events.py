"""A provider's pull-request event, read from the body GitHub or GitLab posts.

GitHub's ``pull_request`` webhook and GitLab's merge request hook describe
the pull request the way ``GET /pulls/{n}`` and ``GET /merge_requests/{iid}``
do, plus what happened (``action``) and the repository's default branch.
:func:`github_pull_event` and :func:`gitlab_pull_event` read the fields
covworker uses into one :class:`PullEvent`; everything else in the body is
ignored. The body is the provider's only after its signature or token was
checked (``app/api/provider_webhooks.py``), and is bounded there; the fields
are still checked here (types, SHAs, numbers), and cut when stored.

Which events may change what a pull request shows, as Codecov reacts to them
(its ``services/webhook_handlers``): GitHub ``opened``, ``reopened``,
``synchronize`` (a new head) and ``edited`` with ``changes.base`` (a new
base); GitLab ``open``, ``reopen`` and ``update`` with new commits
(``oldrev``) or a new target branch (``changes.target_branch``). Other
pull-request actions are still read (the pull's title or state changed) but
ask for no feedback; other events are not pull-request events at all.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from app.providers.base import ProviderResponseInvalid

#: GitHub's actions that store the pull request, and those that also ask for feedback.
GITHUB_ACTIONS = frozenset({"opened", "reopened", "synchronize", "edited"})
#: GitLab's merge request actions read the same way.
GITLAB_ACTIONS = frozenset({"open", "reopen", "update"})
#: GitLab's merge request states in covworker's words (as ``app/providers/gitlab.py``).
MR_STATE = {"opened": "open", "closed": "closed", "merged": "merged", "locked": "open"}
#: Largest pull request number (PostgreSQL ``integer``).
MAX_NUMBER = 2**31 - 1
_SHA = re.compile(r"^[0-9a-f]{40}$|^[0-9a-f]{64}$")
_NAME = re.compile(r"^[^/\s]+(?:/[^/\s]+)+$")


class EventUnreadable(ProviderResponseInvalid):
    """A signed event whose fields are not what the provider documents."""


@dataclass(frozen=True, slots=True)
class PullEvent:
    """A pull (merge) request as an event describes it."""

    service: str
    #: ``OWNER/NAME`` (GitLab: the project's full path), lower case as stored.
    repository: str
    #: The repository's default branch as the provider says it now (None: not said).
    default_branch: str | None
    action: str
    number: int
    #: ``open``, ``closed`` or ``merged``.
    state: str
    title: str
    url: str
    base_branch: str
    #: GitHub's ``base.sha``; GitLab's hook names none (the pull is read for it).
    base_sha: str | None
    head_branch: str
    head_sha: str
    #: The event may change what the pull request shows: opened, a new head or a new base.
    asks_feedback: bool
    #: Whether the provider says the repository is private (None: not said).
    private: bool | None = None


def github_pull_event(body: dict[str, Any]) -> PullEvent | None:
    """A ``pull_request`` event's pull request; None for an action covworker ignores."""
    action = _text(body, "action")
    if action not in GITHUB_ACTIONS:
        return None
    pull, repo = _object(body, "pull_request"), _object(body, "repository")
    base, head = _object(pull, "base"), _object(pull, "head")
    changes = body.get("changes")
    new_base = isinstance(changes, dict) and isinstance(changes.get("base"), dict)
    state = "merged" if pull.get("merged") is True else _text(pull, "state")
    return PullEvent(
        service="github",
        repository=_repository(_text(repo, "full_name")),
        default_branch=_optional_text(repo, "default_branch"),
        action=action,
        number=_number(pull.get("number")),
        state=state,
        title=_optional_text(pull, "title") or "",
        url=_optional_text(pull, "html_url") or "",
        base_branch=_text(base, "ref"),
        base_sha=_sha(_text(base, "sha")),
        head_branch=_text(head, "ref"),
        head_sha=_sha(_text(head, "sha")),
        asks_feedback=action != "edited" or new_base,
        private=repo["private"] if isinstance(repo.get("private"), bool) else None,
    )


def gitlab_pull_event(body: dict[str, Any]) -> PullEvent | None:
    """A merge request hook's merge request; None for an action covworker ignores."""
    if body.get("object_kind") != "merge_request":
        return None
    mr, project = _object(body, "object_attributes"), _object(body, "project")
    action = _optional_text(mr, "action") or ""
    if action not in GITLAB_ACTIONS:
        return None
    changes = body.get("changes")
    new_base = isinstance(changes, dict) and isinstance(changes.get("target_branch"), dict)
    new_head = bool(mr.get("oldrev"))
    state = _text(mr, "state")
    return PullEvent(
        service="gitlab",
        repository=_repository(_text(project, "path_with_namespace")),
        default_branch=_optional_text(project, "default_branch"),
        action=action,
        number=_number(mr.get("iid")),
        state=MR_STATE.get(state, state),
        title=_optional_text(mr, "title") or "",
        url=_optional_text(mr, "url") or "",
        base_branch=_text(mr, "target_branch"),
        base_sha=None,
        head_branch=_text(mr, "source_branch"),
        head_sha=_sha(_text(_object(mr, "last_commit"), "id")),
        asks_feedback=action != "update" or new_base or new_head,
        # GitLab's hook gives ``visibility_level``: 0 private, 10 internal, 20 public.
        private=(
            project["visibility_level"] != 20
            if type(project.get("visibility_level")) is int
            else None
        ),
    )


def _object(body: dict[str, Any], key: str) -> dict[str, Any]:
    value = body.get(key)
    if not isinstance(value, dict):
        raise EventUnreadable(f"the event has no {key!r} object")
    return value


def _text(body: dict[str, Any], key: str) -> str:
    value = body.get(key)
    if not isinstance(value, str) or not value:
        raise EventUnreadable(f"the event's {key!r} is not a non-empty string")
    return value


def _optional_text(body: dict[str, Any], key: str) -> str | None:
    value = body.get(key)
    return value if isinstance(value, str) and value else None


def _number(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_NUMBER:
        raise EventUnreadable(f"the pull request number {str(value)[:40]!r} is not 1..{MAX_NUMBER}")
    return value


def _sha(value: str) -> str:
    lowered = value.lower()
    if not _SHA.match(lowered):
        raise EventUnreadable(f"{value[:80]!r} is not a full commit SHA")
    return lowered


def _repository(name: str) -> str:
    if len(name) > 255 or not _NAME.match(name):
        raise EventUnreadable(f"{name[:80]!r} is not a repository's OWNER/NAME")
    return name.lower()
