"""covworker's actors, on Dramatiq's broker: ``dramatiq app.actors`` runs them.

As in Dramatiq's tutorial, the broker is set and the actors are declared
at module level. Importing this module in a worker process builds the app
(:func:`app.runtime.worker.build_app`: the broker, its middleware and the
``Services``) from ``Settings()``, the environment read once. An embedded
run, a CLI command or a test builds its app first and then imports this
module: the actors are declared on that app's broker, and follow any app
built later (:func:`declare_on`, which ``build_app`` calls for each).
``app.runtime.worker`` does not import this module: it only builds.

Each actor is thin: it runs one step of ``app.pipeline`` with the app's
services and names the next message. To add an actor, declare it here like
the others, with ``**QUEUE``, and list it in ``ACTORS``.

Two queues, both consumed by ``dramatiq app.actors``: ``COVWORKER_QUEUE_NAME``
for the processors and everything else, and ``COVWORKER_FINISHER_QUEUE_NAME``
for ``notify`` and for the finisher a commit's last upload in flight sends
(:mod:`app.pipeline.processor`), so a settled commit does not wait behind
other commits' parsing. Processors have a lower priority than the rest, so a
worker runs a finisher it has prefetched before the processors it has.

A third, ``COVWORKER_BULK_QUEUE_NAME``, holds a commit's uploads beyond its
``COVWORKER_PROCESSOR_SHARE`` processing at once (``bulk_upload_processor``,
lower priority still): a worker's consumers take from every queue, so a
commit of four uploads is parsed beside a matrix of two hundred, not after
it (app/ingest/admit.py).
"""

from __future__ import annotations

import logging
import time
from typing import Any

import dramatiq

from app.db import pull_deliveries
from app.errors import MessageError
from app.feedback import delivery, rows
from app.feedback import prepare as preparing
from app.ingest.arrival import check_arrival
from app.notify import webhooks
from app.notify.notifier import notify_commit
from app.pipeline.finisher import debounce_ms, finish_commit
from app.pipeline.processor import process_upload
from app.recovery import sweeper
from app.recovery.watch import RedisLossWatch
from app.runtime.parse_budget import upload_raw_size
from app.runtime.services import Services
from app.runtime.state import commit_key as commit_key  # the gate key of PER_COMMIT
from app.runtime.state import notify_key
from app.runtime.worker import CovworkerApp, build_app, on_build, running_app
from app.settings import Settings
from app.storage import STORE_DOWN_RETRY_MS, StorageUnavailable
from middleware import PerKeyConcurrency

logger = logging.getLogger(__name__)
_built_here = running_app() is None  # a worker process (``dramatiq app.actors``)
covworker = running_app() or build_app(Settings())
broker = covworker.broker
if _built_here:  # once per worker process, not in every CLI command
    covworker.services.providers.announce()

#: Every actor's queue; a ``MessageError`` (unknown upload or commit) is dead-lettered, not retried.
QUEUE: dict[str, Any] = {"queue_name": covworker.settings.queue_name, "throws": (MessageError,)}
#: ``notify``'s queue, where the finisher sent ahead goes too (module docstring).
FINISHER_QUEUE: dict[str, Any] = {**QUEUE, "queue_name": covworker.settings.finisher_queue_name}
#: The bulk queue: a commit's uploads beyond its share (module docstring).
BULK_QUEUE: dict[str, Any] = {**QUEUE, "queue_name": covworker.settings.bulk_queue_name}
#: Actors declared on the finisher queue (``build_app`` keeps them there on a later app).
ON_FINISHER_QUEUE = frozenset({"notify", "deliver_pull", "deliver_webhook"})
#: The processors' Dramatiq priority: lower than every other actor's (0; a
#: higher number runs later), so a worker that has prefetched processors and
#: a finisher runs the finisher first.
PROCESSOR_PRIORITY = 10
#: The bulk queue's processors run after the shared queue's a worker holds.
BULK_PROCESSOR_PRIORITY = 20
#: A spaced ``prepare`` message is sent this much after its row is due (s):
#: one that arrives before is not claimed and waits for the sweep.
PREPARE_MARGIN_S = 0.05

#: Finisher messages of one commit are fungible, and so are its notify
#: messages: whichever runs does the work of all, so an over-limit one is
#: skipped while a deferred copy of its commit is pending
#: (``middleware.PerKeyConcurrency``). Each actor has its own key.
PER_COMMIT: dict[str, Any] = {"concurrency_key": commit_key, "concurrency_skip_if_pending": True}
PER_COMMIT_NOTIFY: dict[str, Any] = {**PER_COMMIT, "concurrency_key": notify_key}


def services() -> Services:
    """The services of the app these actors run in."""
    app = running_app()
    assert app is not None, "app.actors builds the app on import"
    return app.services


@dramatiq.actor(**QUEUE, priority=PROCESSOR_PRIORITY)
def upload_processor(upload_id: int) -> None:
    """Parse one upload into the commit's processed set, then send the finisher;
    within the process's parse budget (COVWORKER_PARSE_BUDGET_MB)."""
    _process(upload_processor, upload_id)


@dramatiq.actor(**BULK_QUEUE, priority=BULK_PROCESSOR_PRIORITY)
def bulk_upload_processor(upload_id: int) -> None:
    """``upload_processor`` for a commit's uploads beyond its share of the
    shared queue (``send_processor``), taken after the shared queue's."""
    _process(bulk_upload_processor, upload_id)


def _process(actor: dramatiq.Actor[[int], None], upload_id: int) -> None:
    found = services()
    try:
        size, first = upload_raw_size(found.sessions, upload_id), actor is upload_processor
        with found.parse_budget.hold(size, first=first):  # the shared queue's wait first
            process_upload(found, upload_id, send_finisher, send_finisher_ahead)
    except StorageUnavailable as exc:  # its payload waits in a store that is down
        logger.warning("Upload %s: %s; trying again later.", upload_id, exc)
        actor.send_with_options(args=(upload_id,), delay=STORE_DOWN_RETRY_MS)


def send_processor(upload_id: int, /, *, bulk: bool = False) -> None:
    """Queue an upload's processor: on the shared queue, or with ``bulk`` on
    the bulk queue (``app.ingest.admit.send_in_lanes`` decides which)."""
    (bulk_upload_processor if bulk else upload_processor).send(upload_id)


def send_finisher(repoid: int, commitid: int) -> None:
    """The finisher on the shared queue, behind the commit's uploads already queued there."""
    actor = upload_finisher  # this module's, at call time (the benchmark's baselines swap it)
    _send_coalesced(actor, _debounced(actor.message(repoid, commitid), repoid, commitid))


def send_finisher_ahead(repoid: int, commitid: int) -> None:
    """The finisher on the finisher queue: nothing of its commit is processing any more."""
    actor = upload_finisher
    queue = services().settings.finisher_queue_name
    message = actor.message(repoid, commitid).copy(queue_name=queue)
    _send_coalesced(actor, _debounced(message, repoid, commitid))


def _debounced(message: dramatiq.Message[Any], repoid: int, commitid: int) -> dramatiq.Message[Any]:
    """The message with its commit's debounce window (``finisher.debounce_ms``)
    when it is longer than the actor's."""
    found = services()
    window = debounce_ms(found.settings, found.state.last_run_ms(repoid, commitid))
    if window <= found.settings.finisher_debounce_ms:
        return message
    return message.copy(options={**message.options, "concurrency_debounce_ms": window})


def _send_coalesced(actor: dramatiq.Actor[Any, Any], message: dramatiq.Message[Any]) -> None:
    """Enqueue through the gate: not at all while a finisher of the commit is pending on
    that queue, not started yet (its run merges this upload too; docs/gate.md)."""
    gate = PerKeyConcurrency.of(actor.broker)
    if gate is None:
        actor.broker.enqueue(message)
    else:
        gate.enqueue(actor.broker, message)


def send_finisher_for(repoid: int, commitid: int) -> None:
    """Ahead if none of the commit's uploads is processing now, else on the shared queue."""
    processing, _ = services().state.counts(repoid, commitid)
    (send_finisher_ahead if processing == 0 else send_finisher)(repoid, commitid)


@dramatiq.actor(  # limit: COVWORKER_FINISHER_CONCURRENCY (the gate's default)
    **QUEUE,
    **PER_COMMIT,
    # Arrivals of a commit batch into one merge pass (COVWORKER_FINISHER_DEBOUNCE_MS).
    concurrency_debounce_ms=covworker.settings.finisher_debounce_ms,
)
def upload_finisher(repoid: int, commitid: int) -> None:
    """Merge every processed upload of the commit; notify once it is settled."""
    found, started = services(), time.perf_counter()
    outcome = finish_commit(
        found,
        repoid,
        commitid,
        send_notify=notify_settled,
        send_processor=send_processor,
    )
    if outcome.merged:  # how long a run of this commit takes: its next window follows it
        found.state.record_run(repoid, commitid, time.perf_counter() - started)
    if found.providers.by_service:  # uploads still in flight: statuses say pending
        pending = rows.enqueue_pending(found, commitid)
        if pending is not None:
            send_pull_delivery(pending)


def notify_settled(repoid: int, commitid: int) -> None:
    """The notification of a commit its finisher found settled, written in
    the finisher's own delivery: a ``notify`` message would wait for a
    consumer's poll and run wherever it is taken, often in a process that
    has not compiled its statements yet. If it cannot be written now, the
    ``notify`` message writes it, retried as any message is (I6 holds either
    way: the notifications table's unique key decides)."""
    try:
        notify_and_follow_up(repoid, commitid)
    except Exception as exc:
        logger.warning(
            "Commit %s:%s: notifying in the finisher failed (%s: %s); sending notify.",
            repoid,
            commitid,
            type(exc).__name__,
            exc,
        )
        notify.send(repoid, commitid)


@dramatiq.actor(**FINISHER_QUEUE, **PER_COMMIT_NOTIFY, concurrency_limit=1)
def notify(repoid: int, commitid: int) -> None:
    """Write the settled report's one notification; its webhook goes out from the outbox.

    The finisher that settles a commit notifies itself (:func:`notify_settled`);
    this message is the sweep's, and the fallback of a notification that failed there."""
    notify_and_follow_up(repoid, commitid)


def notify_and_follow_up(repoid: int, commitid: int) -> None:
    """The commit's notification, then its webhook and pull-request messages."""
    result = notify_commit(services(), repoid, commitid)
    if result.webhook_pending is not None:
        send_webhook(result.webhook_pending)
    if result.prepare_pending is not None:  # written with the notification
        # Due after its delay (a matrix still settling); a little late, not early.
        delay_s = result.prepare_delay_s and result.prepare_delay_s + PREPARE_MARGIN_S
        send_pull_delivery(result.prepare_pending, delay_s)


def send_webhook(notification_id: int, delay_s: float = 0.0) -> None:
    """Queue one delivery attempt of a notification's webhook (after ``delay_s``)."""
    deliver_webhook.send_with_options(args=(notification_id,), delay=int(delay_s * 1000) or None)


@dramatiq.actor(**FINISHER_QUEUE)
def deliver_webhook(notification_id: int) -> None:
    """POST a notification's webhook; on failure, send itself again after a backoff.

    On the finisher queue, beside ``notify``: a notification is not held
    behind the processors' backlog.

    The notification row is the outbox: retried on its own schedule for
    ``COVWORKER_WEBHOOK_HORIZON_S``, never through ``Retries``.
    """
    attempt = webhooks.deliver_webhook(services(), notification_id)
    if attempt.retry_in_s is not None:
        send_webhook(notification_id, attempt.retry_in_s)


def send_pull_delivery(delivery_id: int, delay_s: float = 0.0) -> None:
    """Queue one attempt at a pull-request delivery row (after ``delay_s``)."""
    deliver_pull.send_with_options(args=(delivery_id,), delay=int(delay_s * 1000) or None)


@dramatiq.actor(**FINISHER_QUEUE)
def deliver_pull(delivery_id: int) -> None:
    """One pull-request delivery (prepare, a status, the comment) from its outbox row.

    Retried on the row's own schedule for ``COVWORKER_PR_DELIVERY_HORIZON_S``,
    never through ``Retries``; a prepare sends the rows it wrote.
    """
    svc = services()

    def attempt_one(row: int) -> rows.Attempt:
        return delivery.deliver(svc, svc.providers, row)  # a prepare row runs prepare

    attempt = attempt_one(delivery_id)
    if attempt.retry_in_s is not None:
        send_pull_delivery(delivery_id, attempt.retry_in_s)
    # A prepare's statuses and comment are written here, at once, not one queue
    # hop later; one that fails is retried on its row's schedule.
    followups = attempt.followups
    for row, done in zip(followups, preparing.writers().map(attempt_one, followups), strict=True):
        if done.retry_in_s is not None:
            send_pull_delivery(row, done.retry_in_s)


@dramatiq.actor(**QUEUE)
def sweep() -> None:
    """Re-drive stuck uploads (past ``COVWORKER_SWEEP_AFTER_S``; all, once Redis lost its data)."""
    sweep_uploads()
    with services().sessions() as session:  # pull-request rows whose message was lost
        lost = pull_deliveries.overdue(session, delivery.utcnow())
    for delivery_id in lost:
        send_pull_delivery(delivery_id)


@dramatiq.actor(**QUEUE)
def payload_arrival(upload_id: int, key: str, expires: int, attempt: int = 0) -> None:
    """A presigned upload: once its object is in the store, process it (app/ingest/arrival.py)."""

    def look_again(delay_ms: int) -> None:
        payload_arrival.send_with_options(
            args=(upload_id, key, expires, attempt + 1), delay=delay_ms
        )

    check_arrival(
        services(),
        upload_id,
        key,
        expires,
        attempt,
        look_again=look_again,
        send_processor=send_processor,
    )


ACTORS: tuple[dramatiq.Actor[Any, Any], ...] = (
    upload_processor,
    bulk_upload_processor,
    payload_arrival,
    upload_finisher,
    notify,
    deliver_webhook,
    deliver_pull,
    sweep,
)


def redrive_everything_in_flight() -> None:
    """The sweep with no age: every upload in flight is sent on again (idempotent)."""
    sweep_uploads(older_than_s=0)


def sweep_uploads(older_than_s: float | None = None) -> sweeper.SweepResult:
    """The sweep, sending what it re-drives to these actors: the sweep actor,
    ``covworker sweep`` and the embedded run's start all re-drive the same way
    (finishers coalesced, ahead when nothing of the commit is processing)."""
    return sweeper.sweep(
        services(),
        send_processor=send_processor,
        send_finisher=send_finisher_for,
        send_notify=notify.send,
        send_webhook=send_webhook,
        older_than_s=older_than_s,
    )


def _queue_of(actor: dramatiq.Actor[Any, Any], settings: Settings) -> str:
    if actor.actor_name in ON_FINISHER_QUEUE:
        return settings.finisher_queue_name
    if actor is bulk_upload_processor:
        return settings.bulk_queue_name
    return settings.queue_name


def declare_on(app: CovworkerApp) -> None:
    """Declare the actors on ``app``'s broker (those of an earlier app move to
    it, on ``app``'s queues), and watch that app's Redis for a loss of data."""
    broker, settings = app.broker, app.settings
    for actor in ACTORS:
        if actor.broker is not broker:
            actor.broker = broker
            actor.queue_name = _queue_of(actor, settings)
            broker.declare_actor(actor)
    # The one actor option taken from the settings: of this app, not the first built.
    upload_finisher.options["concurrency_debounce_ms"] = settings.finisher_debounce_ms

    owners = None
    if settings.redis_cluster:  # a failover may lose a shard's last writes (app/runtime/cluster.py)
        from app.runtime.cluster import SlotOwnerEpochs

        owners = SlotOwnerEpochs(app.services.redis, lambda: app.services.state.prefix)  # type: ignore[arg-type]

    def sweep_if_redis_lost() -> None:  # everything in flight, at once (app/recovery/watch.py)
        if app.services.state.epoch_missing():
            sweep.fn()
        if owners is not None and owners.changed():
            redrive_everything_in_flight()

    broker.add_middleware(
        RedisLossWatch(check=sweep_if_redis_lost, interval_s=settings.redis_loss_check_s)
    )


declare_on(covworker)  # the actors above are on its broker already: this adds the watch
on_build(declare_on)  # and every app built later gets them
