"""The broker and the services of covworker, built once from ``Settings``.

``build_app`` makes the broker (Redis or RabbitMQ, :mod:`app.runtime.brokers`),
adds the middleware (argument validation first, so a malformed message is
dead-lettered before anything else looks at it; then the per-commit gate),
and sets it as Dramatiq's broker. It knows nothing of the actors:
:mod:`app.actors` declares them on the broker set here, and on every app
built after it (``on_build``), so Dramatiq validates their gate options.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dramatiq
from dramatiq.middleware import Middleware, Retries, default_middleware

from app.errors import MessageError
from app.runtime.brokers import CovworkerBroker as CovworkerBroker  # re-exported
from app.runtime.brokers import join_queues as join_queues  # re-exported
from app.runtime.brokers import make_broker
from app.runtime.health import HealthBeat
from app.runtime.held_messages import HeldMessagesReport
from app.runtime.metrics import ActorCpu, MetricsAtBoot
from app.runtime.services import Services
from app.runtime.state import DEAD_LETTER_REASON_TTL_S, dead_letter_reason_key, gate_prefix
from app.settings import Settings
from middleware import ArgumentValidation, PerKeyConcurrency

logger = logging.getLogger(__name__)


@dataclass
class CovworkerApp:
    """What runs covworker in this process: settings, services and the broker.

    The actors are declared at module level in :mod:`app.actors`, on this
    app's broker (``app.actors.upload_processor.send(...)`` sends one).
    """

    settings: Settings
    services: Services
    broker: dramatiq.Broker

    @property
    def gate(self) -> PerKeyConcurrency:
        """The broker's per-commit gate."""
        gate = PerKeyConcurrency.of(self.broker)
        assert gate is not None, "build_worker_app adds the gate to every broker"
        return gate

    def close(self) -> None:
        self.broker.close()
        self.services.close()


#: The app this process runs: the one ``build_app`` built last.
_running: CovworkerApp | None = None


def running_app() -> CovworkerApp | None:
    """The app this process runs, if one was built."""
    return _running


#: Called with every app ``build_app`` builds, in order (``app.actors``
#: declares its actors on the new broker this way).
_build_hooks: list[Callable[[CovworkerApp], None]] = []


def on_build(hook: Callable[[CovworkerApp], None]) -> None:
    """Call ``hook`` with every app built from now on."""
    _build_hooks.append(hook)


class DeadLetterReasons(Middleware):
    """Log and record why a message is dead-lettered.

    Neither broker keeps the reason with the dead letter: the dead-letter
    queue holds the message as it was enqueued (a retried one carries the
    traceback of the attempt before the last; one failed at once, such as a
    ``MessageError`` or bad arguments, none). So once the worker has
    dead-lettered a message (``after_nack``), its last exception is stored
    under ``dead_letter_reason_key`` in Redis for ``DEAD_LETTER_REASON_TTL_S``,
    where the operations page finds it, whichever the broker. Retries fails a
    ``MessageError`` (unknown upload or commit) at once, and Dramatiq's own
    line names only the exception type; the log line here names the message
    and the reason.
    """

    def __init__(self, client: Any = None, namespace: str = "") -> None:
        self.client, self.namespace = client, namespace

    def after_process_message(
        self,
        broker: dramatiq.Broker,
        message: dramatiq.MessageProxy,
        *,
        result: Any = None,
        exception: BaseException | None = None,
    ) -> None:
        if isinstance(exception, MessageError):
            logger.warning(
                "Dead-lettering message %s of actor %s: %s",
                message.message_id,
                message.actor_name,
                exception,
            )

    def after_nack(self, broker: dramatiq.Broker, message: dramatiq.MessageProxy) -> None:
        if self.client is None:
            return
        exception = getattr(message, "_exception", None)  # stuffed by the worker or the gate
        reason = (
            f"{type(exception).__name__}: {exception}"
            if exception is not None
            else "failed without an exception (a middleware gave it up)"
        )
        record = {"reason": reason[:MAX_REASON_CHARS], "at_ms": int(time.time() * 1000)}
        try:
            self.client.set(
                dead_letter_reason_key(self.namespace, message.message_id),
                json.dumps(record),
                ex=DEAD_LETTER_REASON_TTL_S,
            )
        except Exception:  # Redis away: the dead letter is there, without its reason
            logger.warning(
                "Could not record why message %s was dead-lettered.",
                message.message_id,
                exc_info=True,
            )


#: Longest dead-letter reason kept (an exception's message can be large).
MAX_REASON_CHARS = 2000


class MappersAtBoot(Middleware):
    """Configure the ORM's mappers when a worker boots, not in its first delivery.

    SQLAlchemy configures them on the first query; in a worker that is the
    first message's, about 10 ms of CPU inside a merge pass (and the gate's
    slot) that every later pass does without. A worker will always need them.
    """

    def after_worker_boot(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        from sqlalchemy.orm import configure_mappers

        configure_mappers()  # app.db.models is imported by app.runtime.services


class BulkQueueFollowsShared(Middleware):
    """A worker told which queues to consume (``dramatiq --queues``) that
    consumes the shared queue consumes the bulk queue too: the bulk queue
    holds the shared queue's processors beyond a commit's share
    (``app.ingest.admit.send_in_lanes``), and a layout that names only the
    shared queue, as those written before the bulk queue did, would
    otherwise leave a big matrix's uploads to no one."""

    def __init__(self, shared: str, bulk: str) -> None:
        self.shared, self.bulk = shared, bulk

    def before_worker_boot(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        chosen = worker.consumer_whitelist
        if chosen and self.shared in chosen and self.bulk not in chosen:
            chosen.add(self.bulk)
            logger.info("Consuming %s with %s: it holds that queue's bulk.", self.bulk, self.shared)


def build_broker(
    settings: Settings,
    client: Any,
    extra_middleware: Sequence[Middleware] = (),
    *,
    gate_metrics: bool | None = None,
) -> dramatiq.Broker:
    """The broker (``COVWORKER_BROKER_URL``: Redis or RabbitMQ, app/runtime/brokers.py) with
    covworker's middleware; ``client`` is the Redis (or Redis Cluster) of the
    gate; ``gate_metrics`` defaults to the setting."""
    middleware = [
        Retries(
            max_retries=settings.max_retries,
            min_backoff=settings.min_backoff_ms,
            max_backoff=settings.max_backoff_ms,
        )
        if m is Retries
        else m()
        for m in default_middleware
    ]
    broker = make_broker(settings, client, middleware)
    if settings.metrics:  # the gate's metrics must come after it
        from dramatiq.middleware.prometheus import Prometheus

        broker.add_middleware(Prometheus(), before=Retries)
    broker.add_middleware(ArgumentValidation(), before=Retries)
    broker.add_middleware(DeadLetterReasons(client, settings.namespace), before=Retries)
    # What its consumers hold (RabbitMQ), and that it is alive: /-/ops counts the workers by it.
    broker.add_middleware(HeldMessagesReport(client, settings.namespace))
    if settings.health_dir:  # liveness for `covworker health worker` (app/runtime/health.py)
        broker.add_middleware(HealthBeat(Path(settings.health_dir)))
    for extra in extra_middleware:  # e.g. the benchmark's timing; sees the gate's decisions
        broker.add_middleware(extra)
    broker.add_middleware(
        PerKeyConcurrency(
            client=client,
            key_prefix=gate_prefix(settings.namespace),
            concurrency_delay_ms=settings.gate_delay_ms,
            concurrency_jitter_ms=settings.gate_jitter_ms,
            concurrency_lease_ms=settings.gate_lease_ms,
            pending_ttl_ms=settings.gate_pending_ttl_ms,
            # The finisher's limit: the only gated actor that does not set its own.
            concurrency_limit=settings.finisher_concurrency,
            metrics=settings.metrics if gate_metrics is None else gate_metrics,
        )
    )
    return broker


def build_app(
    settings: Settings,
    *,
    redis_client: Any = None,
    extra_middleware: Sequence[Middleware] = (),
    gate_metrics: bool | None = None,
) -> CovworkerApp:
    """Build the services and the broker, and set it as Dramatiq's.

    The worker process builds one when it imports :mod:`app.actors`; an
    embedded run, a CLI command or a test builds its own, and the actors of
    :mod:`app.actors` (once imported) follow the app built last.
    """
    global _running
    services = Services.from_settings(settings, redis_client=redis_client)
    broker = build_broker(settings, services.redis, extra_middleware, gate_metrics=gate_metrics)
    # The pipeline's series, at zero from start-up (app/runtime/metrics.py); made at
    # boot even when not served, as the first delivery would make them anyway.
    broker.add_middleware(MetricsAtBoot(services.metrics))
    broker.add_middleware(ActorCpu(services.metrics))
    broker.add_middleware(MappersAtBoot())
    broker.add_middleware(BulkQueueFollowsShared(settings.queue_name, settings.bulk_queue_name))
    dramatiq.set_broker(broker)
    # Every queue is consumed even before an actor declared on it is.
    for queue_name in settings.queue_names:
        broker.declare_queue(queue_name)
    _running = CovworkerApp(settings=settings, services=services, broker=broker)
    for hook in _build_hooks:
        hook(_running)
    return _running
