"""The broker and the services of covworker, built once from ``Settings``.

``build_app`` makes the broker (Redis or RabbitMQ, :mod:`app.brokers`),
adds the middleware (argument validation first, so a malformed message is
dead-lettered before anything else looks at it; then the per-commit gate),
sets it as Dramatiq's broker and only then declares the actors of
:mod:`app.actors` on it, so Dramatiq validates their gate options.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dramatiq
from dramatiq.middleware import Middleware, Retries, default_middleware

from app.brokers import CovworkerBroker as CovworkerBroker  # re-exported
from app.brokers import join_queues as join_queues  # re-exported
from app.brokers import make_broker
from app.errors import MessageError
from app.health import HealthBeat
from app.metrics import MetricsAtBoot
from app.pipeline.recovery import RedisLossWatch
from app.services import Services
from app.settings import Settings
from middleware import ArgumentValidation, PerKeyConcurrency

logger = logging.getLogger(__name__)


def commit_key(repoid: int, commitid: int) -> str:
    """The gate key of a per-commit message, called like the actor: ``<repoid>:<commitid>``."""
    return f"{repoid}:{commitid}"


@dataclass
class CovworkerApp:
    """What runs covworker in this process: settings, services and the broker.

    The actors are declared at module level in :mod:`app.actors`, on this
    app's broker; the properties below are those actors.
    """

    settings: Settings
    services: Services
    broker: dramatiq.Broker

    @property
    def gate(self) -> PerKeyConcurrency:
        """The broker's per-commit gate."""
        return next(m for m in self.broker.middleware if isinstance(m, PerKeyConcurrency))

    @property
    def upload_processor(self) -> dramatiq.Actor[Any, Any]:
        return _actors().upload_processor

    @property
    def upload_finisher(self) -> dramatiq.Actor[Any, Any]:
        return _actors().upload_finisher

    @upload_finisher.setter
    def upload_finisher(self, actor: dramatiq.Actor[Any, Any]) -> None:
        """Make the processor send to another finisher (the benchmark's baselines)."""
        _actors().upload_finisher = actor

    @property
    def payload_arrival(self) -> dramatiq.Actor[Any, Any]:
        """Looks for a presigned upload's object (app/storage/arrival.py)."""
        return _actors().payload_arrival

    @property
    def notify(self) -> dramatiq.Actor[Any, Any]:
        return _actors().notify

    @property
    def sweep(self) -> dramatiq.Actor[Any, Any]:
        return _actors().sweep

    @property
    def deliver_webhook(self) -> dramatiq.Actor[Any, Any]:
        return _actors().deliver_webhook

    def close(self) -> None:
        self.broker.close()
        self.services.close()


#: The app this process runs: the one ``build_app`` built last.
_running: CovworkerApp | None = None


def running_app() -> CovworkerApp | None:
    """The app this process runs, if one was built."""
    return _running


def _actors() -> Any:
    return importlib.import_module("app.actors")


class DeadLetterReasons(Middleware):
    """Log why a message that can never succeed is dead-lettered.

    Retries fails a ``MessageError`` (unknown upload or commit) at once, and
    Dramatiq's own line names only the exception type; this one names the
    message and the reason, as ``ArgumentValidation`` does for bad arguments.
    """

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


def build_broker(
    settings: Settings,
    client: Any,
    extra_middleware: Sequence[Middleware] = (),
    *,
    gate_metrics: bool | None = None,
) -> dramatiq.Broker:
    """The broker (``COVWORKER_BROKER_URL``: Redis or RabbitMQ, app/brokers.py) with
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
    broker.add_middleware(DeadLetterReasons(), before=Retries)
    if settings.health_dir:  # liveness for `covworker health worker` (app/health.py)
        broker.add_middleware(HealthBeat(Path(settings.health_dir)))
    for extra in extra_middleware:  # e.g. the benchmark's timing; sees the gate's decisions
        broker.add_middleware(extra)
    broker.add_middleware(
        PerKeyConcurrency(
            client=client,
            key_prefix=f"{settings.namespace}:gate",
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


def redrive_everything_in_flight() -> None:
    """The sweep with no age: every upload in flight is sent on again (idempotent)."""
    from app.pipeline import sweeper

    actors = _actors()
    sweeper.sweep(
        actors.services(),
        send_processor=actors.upload_processor.send,
        send_finisher=actors.send_finisher_for,
        send_notify=actors.notify.send,
        send_webhook=actors.send_webhook,
        older_than_s=0,
    )


def build_app(
    settings: Settings,
    *,
    redis_client: Any = None,
    extra_middleware: Sequence[Middleware] = (),
    gate_metrics: bool | None = None,
) -> CovworkerApp:
    """Build the services and the broker, set it as Dramatiq's, and declare the actors on it.

    The worker process builds one, when it imports :mod:`app.actors`; an
    embedded run, a CLI command or a test builds its own, and the actors of
    :mod:`app.actors` follow the app built last.
    """
    global _running
    services = Services.from_settings(settings, redis_client=redis_client)
    broker = build_broker(settings, services.redis, extra_middleware, gate_metrics=gate_metrics)
    if settings.metrics:  # the pipeline's series, at zero from start-up (app/metrics.py)
        broker.add_middleware(MetricsAtBoot(services.metrics))
    dramatiq.set_broker(broker)
    _running = CovworkerApp(settings=settings, services=services, broker=broker)
    actors = _actors()  # the first import declares them on this broker
    for actor in getattr(actors, "ACTORS", ()):  # an earlier app's: declare them on this one
        if actor.broker is not broker:
            actor.broker = broker
            ahead = actor.actor_name in getattr(actors, "ON_FINISHER_QUEUE", ())
            actor.queue_name = settings.finisher_queue_name if ahead else settings.queue_name
            broker.declare_actor(actor)
    # The finisher queue is consumed even before an actor declared on it is.
    broker.declare_queue(settings.finisher_queue_name)

    owners = None
    if settings.redis_cluster:  # a failover may lose a shard's last writes (app/cluster.py)
        from app.cluster import SlotOwnerEpochs

        owners = SlotOwnerEpochs(services.redis, lambda: services.state.prefix)  # type: ignore[arg-type]

    def sweep_if_redis_lost() -> None:  # everything in flight, at once (app/pipeline/recovery.py)
        if services.state.epoch_missing():
            _actors().sweep.fn()
        if owners is not None and owners.changed():
            redrive_everything_in_flight()

    broker.add_middleware(
        RedisLossWatch(check=sweep_if_redis_lost, interval_s=settings.redis_loss_check_s)
    )
    return _running
