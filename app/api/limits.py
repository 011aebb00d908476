"""Request bodies are bounded while they stream, before anyone parses them.

Every request except a payload (``PUT /upload/payload/...`` and the legacy
``POST /upload/v2``, bounded by ``COVWORKER_MAX_UPLOAD_BYTES`` where they
are stored) carries at most ``COVWORKER_MAX_REQUEST_BODY_BYTES``: Codecov's
JSON calls and the login forms are a few hundred bytes. A provider's event
(``POST /webhooks/github``, ``/webhooks/gitlab``) carries a pull request's
description and two repositories, and has its own limit,
``COVWORKER_MAX_PROVIDER_EVENT_BYTES``. A declared
``Content-Length`` over the limit is answered 413 before a byte of the body
is read; an undeclared (chunked) body is cut off with a 413 as soon as the
bytes received pass it. Nothing here buffers: a handler that never reads
the body (a refused token) never receives it.

A URL holding a NUL byte is refused 400 here too: no name or path has one,
and PostgreSQL refuses it in a query.

Beside it, ``SecurityHeaders`` adds the headers every response needs.
"""

from __future__ import annotations

import json
import re

from starlette.types import ASGIApp, Message, Receive, Scope, Send

#: Paths whose bodies are payloads, bounded where they are stored.
_PAYLOAD_PATH = re.compile(r"/upload/(?:payload/|v2$)")
#: Paths of the providers' events (app/api/provider_webhooks.py).
_PROVIDER_EVENT_PATH = re.compile(r"/webhooks/(?:github|gitlab)/*$")


class BodyTooLarge(Exception):
    """The body streamed past the limit."""


class LimitRequestBodies:
    """ASGI middleware: 413 for a non-payload body over ``max_bytes`` (a
    provider's event: over ``provider_event_max_bytes``, ``max_bytes`` if None)."""

    def __init__(
        self, app: ASGIApp, max_bytes: int, provider_event_max_bytes: int | None = None
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.provider_event_max_bytes = provider_event_max_bytes or max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if "\x00" in scope["path"] or b"%00" in scope.get("query_string", b""):
            await _answer(send, 400, "the URL contains a NUL byte (%00)")
            return
        if _PAYLOAD_PATH.search(scope["path"]):
            await self.app(scope, receive, send)
            return
        limit = self.max_bytes
        setting = "COVWORKER_MAX_REQUEST_BODY_BYTES"
        if _PROVIDER_EVENT_PATH.search(scope["path"]):
            limit, setting = self.provider_event_max_bytes, "COVWORKER_MAX_PROVIDER_EVENT_BYTES"
        for name, value in scope.get("headers", ()):
            if name == b"content-length" and (not value.isdigit() or int(value) > limit):
                await _refuse(send, value.decode("latin-1")[:32], limit, setting)
                return
        received = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLarge
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except BodyTooLarge:
            if started:  # pragma: no cover - a handler answered before reading the body
                raise
            await _refuse(send, f"more than {limit}", limit, setting)


async def _refuse(send: Send, size: str, limit: int, setting: str) -> None:
    detail = f"the request body of {size} bytes is over the limit of {limit} bytes ({setting})"
    await _answer(send, 413, detail)


async def _answer(send: Send, status: int, detail: str) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


#: A page loads its own vendored assets only; nothing may frame it.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
_SECURITY_HEADERS = [
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
]


class SecurityHeaders:
    """ASGI middleware: every response says what it may load, that its type
    is what it declares, and that no other site may frame it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {name.lower() for name, _ in message.get("headers", ())}
                extra = [(n, v) for n, v in _SECURITY_HEADERS if n not in present]
                message = {**message, "headers": [*message.get("headers", ()), *extra]}
            await send(message)

        await self.app(scope, receive, with_headers)
