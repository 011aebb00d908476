"""The operations page: the broker's queues, the gate and the sweep, live.

Everything here is read from where the pipeline keeps it: the broker's
queues (Dramatiq's Redis keys, or RabbitMQ's queues over AMQP), the reasons
workers recorded for the messages they dead-lettered, the gate's sorted
sets, the sweep's last-run record, and the notifications table.
``RedisLayout`` names those keys in one place, so a change of the
middleware's key scheme is fixed here only.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import redis
import sqlalchemy as sa
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response

from app.db.models import Commit, Notification, Repository
from app.db.pull_deliveries import delivery_counts, recent_failures
from app.runtime.brokers import QueueInspector, RedisQueueInspector, queue_inspector
from app.runtime.held_messages import (
    REPORT_INTERVAL_S,
    REPORT_TTL_S,
    reported_held,
    reported_workers,
)
from app.runtime.services import Services
from app.runtime.state import broker_namespace, dead_letter_reasons, gate_prefix, last_sweep
from app.settings import Settings
from app.web import access
from app.web.forms import STALE_FORM, form_page, read_form, set_login_cookie

#: Most dead letters, gate keys and notifications the page lists.
LIST_LIMIT = 50
#: Seconds between the page's refreshes.
REFRESH_S = 5
DEFERRALS_OPTION = "concurrency_deferrals"  # middleware.gate._options.DEFERRALS


@dataclass(frozen=True)
class RedisLayout:
    """Key names of the broker and of the gate, built from app/runtime/state.py's.

    ``queue`` is the shared queue, ``finisher_queue`` the queue of notify and
    of finishers sent ahead (``COVWORKER_FINISHER_QUEUE_NAME``), ``bulk_queue``
    that of a commit's uploads beyond its share (``COVWORKER_BULK_QUEUE_NAME``),
    if any.
    """

    namespace: str
    queue: str
    finisher_queue: str = ""
    bulk_queue: str = ""

    @property
    def broker(self) -> str:
        return broker_namespace(self.namespace)

    @property
    def queues(self) -> tuple[str, ...]:
        return tuple(
            dict.fromkeys(q for q in (self.queue, self.finisher_queue, self.bulk_queue) if q)
        )

    def queue_key(self, suffix: str = "", queue: str | None = None) -> str:
        return f"{self.broker}:{queue or self.queue}{suffix}"

    @property
    def heartbeats(self) -> str:
        return f"{self.broker}:__heartbeats__"

    @property
    def acks_pattern(self) -> str:
        return f"{self.broker}:__acks__.*"

    @property
    def gate_pattern(self) -> str:
        return f"{gate_prefix(self.namespace)}:*"

    def gate_name(self, key: str) -> str:
        """``<ns>:gate:{<key>}`` -> ``<key>``."""
        inner = key[len(gate_prefix(self.namespace)) + 1 :]
        return inner[1:-1] if inner.startswith("{") and inner.endswith("}") else inner


def _text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _reason(message: dict[str, Any]) -> str:
    """The last line of the traceback the message carries: that of the attempt
    before the last (Retries adds it to the copy it enqueues again)."""
    trace = str((message.get("options") or {}).get("traceback") or "").strip()
    return trace.splitlines()[-1] if trace else "no reason recorded"


#: What the page says of the messages workers hold, on a broker that does not tell.
IN_FLIGHT_UNKNOWN = (
    "RabbitMQ does not tell an AMQP client how many messages its consumers hold "
    "(delivered, not yet acknowledged), and no worker reports them: Ready counts only "
    'those no worker holds. "rabbitmqctl list_queues name messages_ready '
    'messages_unacknowledged" or the management plugin shows them.'
)
#: ... and when the workers report them (app/runtime/held_messages.py).
IN_FLIGHT_REPORTED = (
    "RabbitMQ does not tell an AMQP client how many messages its consumers hold: "
    f"In flight (and the delayed messages held until due) are as the workers report "
    f"them, every {REPORT_INTERVAL_S:g} s; a worker that died is counted for up to "
    f"{REPORT_TTL_S:g} s."
)


def with_recorded_reasons(
    client: redis.Redis, namespace: str, letters: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The dead letters with the reason the worker that dead-lettered each
    recorded (app.runtime.worker.DeadLetterReasons), where there is one: it names the
    last attempt's exception, which the message itself never carries."""
    try:
        recorded = dead_letter_reasons(client, namespace, [d["message_id"] for d in letters])
    except redis.RedisError:
        return letters
    return [{**d, "reason": recorded.get(d["message_id"], d["reason"])} for d in letters]


def _scan(client: redis.Redis, pattern: str, limit: int) -> list[str]:
    found = []
    for key in client.scan_iter(match=pattern, count=500):
        found.append(_text(key))
        if len(found) >= limit:
            break
    return sorted(found)


def _queue_state(inspector: QueueInspector, queue: str) -> dict[str, Any]:
    found = inspector.queue_state(queue)
    dead_letters = [
        {
            "message_id": letter.message_id,
            "queue": queue,
            "actor": letter.body.get("actor_name"),
            "args": letter.body.get("args"),
            "at_ms": letter.at_ms,
            "reason": _reason(letter.body),
        }
        for letter in inspector.dead_letters(queue, LIST_LIMIT)
    ]
    return {
        "queue": queue,
        "ready": found.ready,
        "stored": found.stored,
        "delayed": found.delayed,
        "dead": found.dead,
        "dead_letters": dead_letters,
    }


def with_reported_held(client: redis.Redis, namespace: str, broker: dict[str, Any]) -> None:
    """On a broker that does not count what its consumers hold (RabbitMQ):
    ``in_flight`` and the held delayed messages as the workers report them."""
    try:
        held = reported_held(client, namespace, [q["queue"] for q in broker["queues"]])
    except redis.RedisError:
        return
    if held is None:
        return
    broker["in_flight"], delayed_held = held
    broker["delayed"] += delayed_held
    broker["in_flight_note"] = IN_FLIGHT_REPORTED


def broker_state(client: redis.Redis, layout: RedisLayout) -> dict[str, Any]:
    """The Redis broker's queues (``inspected_broker_state`` of its keys)."""
    state = inspected_broker_state(RedisQueueInspector(client, layout.broker), layout)
    state["dead_letters"] = with_recorded_reasons(client, layout.namespace, state["dead_letters"])
    return state


def inspected_broker_state(inspector: QueueInspector, layout: RedisLayout) -> dict[str, Any]:
    """The broker's queues, summed, with each queue's own counts under ``queues``.

    Whichever the broker (``app.runtime.brokers``); on RabbitMQ ``in_flight`` is
    None, and ``in_flight_note`` says why: AMQP does not count the messages
    workers hold (only the management plugin or ``rabbitmqctl`` does).
    """
    queues = [_queue_state(inspector, queue) for queue in layout.queues]
    dead_letters = sorted(
        (d for q in queues for d in q.pop("dead_letters")), key=lambda d: -d["at_ms"]
    )[:LIST_LIMIT]
    in_flight = inspector.in_flight()
    return {
        "queue": layout.queue,
        "queues": queues,
        "ready": sum(q["ready"] for q in queues),
        "in_flight": in_flight,
        "in_flight_note": IN_FLIGHT_UNKNOWN if in_flight is None else None,
        "stored": sum(q["stored"] for q in queues),
        "delayed": sum(q["delayed"] for q in queues),
        "dead": sum(q["dead"] for q in queues),
        "workers": inspector.workers(layout.queues),
        "dead_letters": dead_letters,
    }


def gate_state(
    client: redis.Redis, layout: RedisLayout, inspector: QueueInspector | None = None
) -> list[dict[str, Any]]:
    """Per gate key: live holders with their lease left, and the pending copy.

    The deferred copies are counted from the broker's delayed messages where
    it shows them (Redis; on RabbitMQ the workers hold them until due)."""
    now_s, now_us = client.time()
    now_ms = int(now_s) * 1000 + int(now_us) // 1000
    deferred: dict[str, int] = {}
    inspector = inspector or RedisQueueInspector(client, layout.broker)
    for message in inspector.delayed_bodies(layout.queues, 5000):
        if (message.get("options") or {}).get(DEFERRALS_OPTION):
            key = ":".join(str(a) for a in (message.get("args") or [])[:2])
            deferred[key] = deferred.get(key, 0) + 1
    keys = []
    for key in _scan(client, layout.gate_pattern, LIST_LIMIT):
        holders, pending = [], None
        members: Any = client.zrange(key, 0, -1, withscores=True)
        for member, expiry in members:
            name, left = _text(member), int(expiry) - now_ms
            if left <= 0:
                continue
            if name.startswith("p:"):
                actor, message_id = _marker(name[2:])
                pending = {"actor": actor, "message_id": message_id, "expires_in_ms": left}
            else:
                holders.append({"holder": name[2:], "lease_left_ms": left})
        gate = layout.gate_name(key)
        keys.append(
            {"key": gate, "holders": holders, "pending": pending, "deferred": deferred.pop(gate, 0)}
        )
    keys.extend(
        {"key": k, "holders": [], "pending": None, "deferred": n}
        for k, n in sorted(deferred.items())
    )
    return keys


def _marker(body: str) -> tuple[str | None, str]:
    """``(actor, message id)`` of a pending marker: ``<len>:<actor>:<id>``, or a bare id."""
    length, sep, rest = body.partition(":")
    if sep and length.isdigit() and rest[int(length) : int(length) + 1] == ":":
        return rest[: int(length)], rest[int(length) + 1 :]
    return None, body


def recent_notifications(services: Services) -> list[dict[str, Any]]:
    with services.sessions() as session:
        rows = session.execute(
            sa.select(Notification, Commit.sha, Repository.name)
            .join(Commit, Commit.id == Notification.commit_id)
            .join(Repository, Repository.id == Commit.repository_id)
            .order_by(Notification.id.desc())
            .limit(LIST_LIMIT)
        ).all()
    out = []
    for note, sha, repo in rows:
        webhook = "none"
        if note.webhook_url:
            webhook = "delivered" if note.webhook_delivered_at else "not delivered"
        out.append(
            {
                "repository": repo,
                "commit": sha,
                "report_version": note.report_version,
                "coverage": (note.totals or {}).get("coverage"),
                "uploads_merged": note.uploads_merged,
                "uploads_errored": note.uploads_errored,
                "webhook": webhook,
                "webhook_delivered_at": (
                    note.webhook_delivered_at.isoformat() if note.webhook_delivered_at else None
                ),
                "at": note.created_at.isoformat(),
            }
        )
    return out


def ops_state(services: Services) -> dict[str, Any]:
    settings = services.settings
    layout = RedisLayout(
        settings.namespace,
        settings.queue_name,
        settings.finisher_queue_name,
        settings.bulk_queue_name,
    )
    client = services.redis
    inspector = queue_inspector(settings, client)
    broker = inspected_broker_state(inspector, layout)
    broker["dead_letters"] = with_recorded_reasons(
        client, settings.namespace, broker["dead_letters"]
    )
    if broker["in_flight"] is None:
        with_reported_held(client, settings.namespace, broker)
    if settings.broker_kind == "redis":  # its heartbeats count every process that enqueues too
        with contextlib.suppress(redis.RedisError):
            broker["workers"] = reported_workers(client, settings.namespace)
    return {
        "at": time.time(),
        "broker": broker,
        "gate": gate_state(client, layout, inspector),
        "sweep": last_sweep(client, settings.namespace),
        "notifications": recent_notifications(services),
        "pull_requests": pull_request_state(services),
    }


def pull_request_state(services: Services) -> dict[str, Any]:
    """The pull-request outbox: rows by state, and the newest failing ones with why."""
    with services.sessions() as session:
        return {
            "providers": sorted(services.providers.by_service),
            "deliveries": delivery_counts(session),
            "failing": recent_failures(session, LIST_LIMIT),
        }


def add_routes(
    router: APIRouter,
    settings: Settings,
    services_of: Callable[[Request], Services],
    page: Callable[..., Response],
) -> None:
    """``/-/ops`` (HTML, refreshing), ``/api/v1/ops`` and the ops sign-in."""

    def allowed(request: Request) -> bool:
        return access.ops_allowed(settings.ops_token, request.headers, request.cookies)

    def refused(request: Request, html: bool) -> Response:
        if not settings.ops_token:
            if html:
                return page("ops_off.html", status=404)
            return JSONResponse(
                {"detail": "the operations page is off: set COVWORKER_OPS_TOKEN to turn it on"},
                status_code=404,
            )
        if html:
            return form_page(request, settings, page, "ops_login.html", 401, error=None)
        return JSONResponse({"detail": "operations token required"}, status_code=401)

    @router.get("/-/ops")
    def ops_page(request: Request) -> Response:
        if not allowed(request):
            return refused(request, html=True)
        return page("ops.html", data=ops_state(services_of(request)), refresh=REFRESH_S)

    @router.post("/-/ops/login")
    async def ops_login(request: Request) -> Response:
        if not settings.ops_token:
            return refused(request, html=True)
        form = await read_form(request)
        token = form.get("token", "").strip()[: access.MAX_TOKEN_CHARS + 1]
        if not access.csrf_matches(request.cookies, form.get("csrf", "")):
            return form_page(request, settings, page, "ops_login.html", 403, error=STALE_FORM)
        hashed = access.hash_token(token)
        if not access.ops_allowed(settings.ops_token, {}, {access.OPS_COOKIE: hashed}):
            error = "That token is not right."
            return form_page(request, settings, page, "ops_login.html", 401, error=error)
        response = RedirectResponse("/-/ops", status_code=303)
        set_login_cookie(
            response,
            request,
            settings,
            access.OPS_COOKIE,
            hashed,
            samesite="strict",
            max_age=12 * 3600,
        )
        return response

    @router.get("/api/v1/ops")
    def ops_json(request: Request) -> Response:
        if not allowed(request):
            return refused(request, html=False)
        return JSONResponse(ops_state(services_of(request)), headers={"Cache-Control": "no-store"})
