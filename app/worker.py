"""The broker and the actors, built from ``Settings``.

``build_app`` makes the Redis broker, adds the middleware (argument
validation first, so a malformed message is dead-lettered before anything
else looks at it; then the per-commit gate), sets it as Dramatiq's broker
and only then declares the actors, so Dramatiq validates their gate
options. The actors are thin: the work is in ``app.pipeline``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import dramatiq
import redis
from dramatiq.brokers.redis import RedisBroker
from dramatiq.middleware import Middleware, Retries, default_middleware

from app.errors import MessageError
from app.pipeline.finisher import finish_commit
from app.pipeline.notifier import notify_commit
from app.pipeline.processor import process_upload
from app.pipeline.recovery import RedisLossWatch
from app.pipeline.sweeper import sweep
from app.pipeline.webhooks import deliver_webhook
from app.services import Services
from app.settings import Settings
from middleware import ArgumentValidation, PerKeyConcurrency

logger = logging.getLogger(__name__)


def commit_key(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    """The gate key of a per-commit message: ``<repoid>:<commitid>``."""
    repoid = kwargs.get("repoid", args[0] if len(args) > 0 else None)
    commitid = kwargs.get("commitid", args[1] if len(args) > 1 else None)
    if repoid is None or commitid is None:
        return None
    return f"{repoid}:{commitid}"


@dataclass
class CovworkerApp:
    settings: Settings
    services: Services
    broker: RedisBroker
    upload_processor: dramatiq.Actor[Any, Any]
    upload_finisher: dramatiq.Actor[Any, Any]
    notify: dramatiq.Actor[Any, Any]
    sweep: dramatiq.Actor[Any, Any]
    deliver_webhook: dramatiq.Actor[Any, Any]

    @property
    def gate(self) -> PerKeyConcurrency:
        """The broker's per-commit gate (its metrics count deferrals)."""
        return next(m for m in self.broker.middleware if isinstance(m, PerKeyConcurrency))

    def close(self) -> None:
        self.broker.close()
        self.services.close()


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
    settings: Settings, client: redis.Redis, extra_middleware: Sequence[Middleware] = ()
) -> RedisBroker:
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
    broker = RedisBroker(
        client=client,
        namespace=f"{settings.namespace}-dramatiq",
        middleware=middleware,
        heartbeat_timeout=settings.broker_heartbeat_timeout_ms,
        maintenance_chance=settings.broker_maintenance_chance,
    )
    if settings.metrics:  # the gate's metrics must come after it
        from dramatiq.middleware.prometheus import Prometheus

        broker.add_middleware(Prometheus(), before=Retries)
    broker.add_middleware(ArgumentValidation(), before=Retries)
    broker.add_middleware(DeadLetterReasons(), before=Retries)
    for extra in extra_middleware:  # e.g. the benchmark's timing; sees the gate's decisions
        broker.add_middleware(extra)
    broker.add_middleware(
        PerKeyConcurrency(
            client=client,
            key_prefix=f"{settings.namespace}:gate",
            defer_delay_ms=settings.gate_delay_ms,
            defer_jitter_ms=settings.gate_jitter_ms,
            lease_ms=settings.gate_lease_ms,
            pending_ttl_ms=settings.gate_pending_ttl_ms,
        )
    )
    return broker


def build_app(
    settings: Settings,
    *,
    redis_client: redis.Redis | None = None,
    extra_middleware: Sequence[Middleware] = (),
) -> CovworkerApp:
    """The broker (set as Dramatiq's global broker) and the declared actors."""
    services = Services.from_settings(settings, redis_client=redis_client)
    broker = build_broker(settings, services.redis, extra_middleware)
    dramatiq.set_broker(broker)
    common: dict[str, Any] = {
        "broker": broker,
        "queue_name": settings.queue_name,
        "throws": (MessageError,),
    }

    def send_processor(upload_id: int) -> None:
        app.upload_processor.send(upload_id)

    def send_finisher(repoid: int, commitid: int) -> None:
        app.upload_finisher.send(repoid, commitid)

    def send_notify(repoid: int, commitid: int) -> None:
        app.notify.send(repoid, commitid)

    def upload_processor(upload_id: int) -> None:
        process_upload(services, upload_id, send_finisher)

    def upload_finisher(repoid: int, commitid: int) -> None:
        finish_commit(
            services,
            repoid,
            commitid,
            send_notify=send_notify,
            send_processor=send_processor,
        )

    def notify(repoid: int, commitid: int) -> None:
        result = notify_commit(services, repoid, commitid)
        if result.webhook_pending is not None:
            send_webhook(result.webhook_pending)

    def send_webhook(notification_id: int, delay_s: float = 0.0) -> None:
        app.deliver_webhook.send_with_options(
            args=(notification_id,), delay=int(delay_s * 1000) or None
        )

    def deliver_webhook_actor(notification_id: int) -> None:
        # Retried on its own schedule (the row is the outbox), never through Retries.
        attempt = deliver_webhook(services, notification_id)
        if attempt.retry_in_s is not None:
            send_webhook(notification_id, attempt.retry_in_s)

    def sweep_actor() -> None:
        sweep(
            services,
            send_processor=send_processor,
            send_finisher=send_finisher,
            send_notify=send_notify,
            send_webhook=send_webhook,
        )

    # Finisher and notify messages of one commit are fungible: whichever runs
    # does the work of all, so over-limit ones may coalesce.
    finisher_gate: dict[str, Any] = {
        "concurrency_key": commit_key,
        "concurrency_limit": settings.finisher_concurrency,
        "concurrency_coalesce": True,
    }
    notify_gate: dict[str, Any] = {
        "concurrency_key": commit_key,
        "concurrency_limit": 1,
        "concurrency_coalesce": True,
    }
    app = CovworkerApp(
        settings=settings,
        services=services,
        broker=broker,
        upload_processor=dramatiq.actor(actor_name="upload_processor", **common)(upload_processor),
        upload_finisher=dramatiq.actor(actor_name="upload_finisher", **common, **finisher_gate)(
            upload_finisher
        ),
        notify=dramatiq.actor(actor_name="notify", **common, **notify_gate)(notify),
        sweep=dramatiq.actor(actor_name="sweep", **common)(sweep_actor),
        deliver_webhook=dramatiq.actor(actor_name="deliver_webhook", **common)(
            deliver_webhook_actor
        ),
    )

    def sweep_if_redis_lost() -> None:
        if services.state.epoch_missing():
            sweep_actor()

    broker.add_middleware(
        RedisLossWatch(check=sweep_if_redis_lost, interval_s=settings.redis_loss_check_s)
    )
    return app
