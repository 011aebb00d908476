"""``POST /webhooks/github`` and ``POST /webhooks/gitlab``: the providers' pull-request events.

Point a GitHub App's (or a repository's) webhook and a GitLab project's
webhook here (docs/pull-requests.md, "Provider webhooks"). Each route:

1. refuses every event (403, saying which setting is missing) while its
   secret is not set: an unsigned event must never be trusted;
2. authenticates the event: GitHub's ``X-Hub-Signature-256``
   (``sha256=`` + the HMAC-SHA256 of the raw body under
   ``COVWORKER_GITHUB_WEBHOOK_SECRET``), GitLab's ``X-Gitlab-Token``
   (``COVWORKER_GITLAB_WEBHOOK_SECRET``), each compared in constant time; a
   mismatch is a 401 and nothing is stored. GitLab's token is a header, so a
   refused event's body is never read; GitHub's signature covers the body,
   which is bounded while it streams (``COVWORKER_MAX_PROVIDER_EVENT_BYTES``,
   ``app.api.limits``);
3. answers GitHub's ``ping``, and 202 to events and actions it does not
   read (naming them);
4. hands a pull-request event to :func:`app.notify.pull_events.receive`:
   404 when covworker has no such repository for that service (nothing
   stored), else 200, and a ``deliver_pull`` message when the pull
   request's head is settled.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from app.api.context import ApiContext, context
from app.api.errors import ApiError
from app.notify.pull_events import Received, receive
from app.providers.events import (
    EventUnreadable,
    PullEvent,
    github_pull_event,
    gitlab_pull_event,
)
from app.runtime.services import Services

router = APIRouter(prefix="/webhooks")
Ctx = Annotated[ApiContext, Depends(context)]
#: GitLab's event header values that carry a merge request (a project's hook, an instance's).
GITLAB_MERGE_REQUEST_EVENTS = frozenset({"Merge Request Hook", "System Hook"})


def github_signature(secret: str, body: bytes) -> str:
    """``X-Hub-Signature-256`` as GitHub computes it."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


@router.post("/github")
async def github_event(
    request: Request,
    ctx: Ctx,
    x_github_event: Annotated[str | None, Header()] = None,
    x_hub_signature_256: Annotated[str | None, Header()] = None,
) -> JSONResponse:
    secret = ctx.settings.github_webhook_secret
    if not secret:
        raise ApiError(
            403,
            "GitHub events are refused: set COVWORKER_GITHUB_WEBHOOK_SECRET to the "
            "webhook's secret (docs/pull-requests.md, Provider webhooks)",
        )
    body = await request.body()
    presented = (x_hub_signature_256 or "").strip()
    if not hmac.compare_digest(presented.encode(), github_signature(secret, body).encode()):
        raise ApiError(
            401,
            "X-Hub-Signature-256 does not match the body signed with "
            "COVWORKER_GITHUB_WEBHOOK_SECRET",
        )
    if x_github_event == "ping":
        return JSONResponse({"detail": "pong"})
    if x_github_event != "pull_request":
        return _ignored(f"event {str(x_github_event)[:64]!r}: covworker reads pull_request")
    return await _pull_event(ctx, body, github_pull_event)


@router.post("/gitlab")
async def gitlab_event(
    request: Request,
    ctx: Ctx,
    x_gitlab_event: Annotated[str | None, Header()] = None,
    x_gitlab_token: Annotated[str | None, Header()] = None,
) -> JSONResponse:
    secret = ctx.settings.gitlab_webhook_secret
    if not secret:
        raise ApiError(
            403,
            "GitLab events are refused: set COVWORKER_GITLAB_WEBHOOK_SECRET to the "
            "webhook's secret token (docs/pull-requests.md, Provider webhooks)",
        )
    presented = (x_gitlab_token or "").encode()
    if not hmac.compare_digest(presented, secret.encode()):
        raise ApiError(401, "X-Gitlab-Token is not COVWORKER_GITLAB_WEBHOOK_SECRET")
    if x_gitlab_event not in GITLAB_MERGE_REQUEST_EVENTS:
        return _ignored(f"event {str(x_gitlab_event)[:64]!r}: covworker reads Merge Request Hook")
    body = await request.body()
    return await _pull_event(ctx, body, gitlab_pull_event)


def _ignored(why: str) -> JSONResponse:
    return JSONResponse({"detail": f"ignored {why}"}, status_code=202)


async def _pull_event(
    ctx: ApiContext, body: bytes, read: Callable[[dict[str, Any]], PullEvent | None]
) -> JSONResponse:
    received = await run_in_threadpool(_receive, ctx.services, body, read)
    if received is None:
        return _ignored(
            "action: covworker reads a pull request opened, reopened, or given a new head or base"
        )
    if not received.known:
        raise ApiError(404, f"{received.detail}: `covworker repo add` adds it")
    return JSONResponse({"detail": received.detail})


def _receive(
    services: Services, body: bytes, read: Callable[[dict[str, Any]], PullEvent | None]
) -> Received | None:
    """Parse, store and (if there is something to send) queue the delivery: off the event loop."""
    try:
        payload = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ApiError(400, f"the event is not valid JSON: {exc}") from None
    if not isinstance(payload, dict):
        raise ApiError(400, "the event is not a JSON object")
    try:
        event = read(payload)
    except EventUnreadable as exc:
        raise ApiError(400, f"the event is unreadable: {exc}") from None
    if event is None:
        return None
    received = receive(services, event)
    if received.prepare_id is not None:
        from app import actors  # declared on the running app (app/api/__init__.py's lifespan)

        actors.send_pull_delivery(received.prepare_id)
    return received
