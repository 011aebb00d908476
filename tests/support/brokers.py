"""The end-to-end and fault tests, on each broker: Dramatiq's Redis broker and RabbitMQ.

A test parametrised with ``BROKERS`` gets ``broker_env(kind, namespace)``:
the environment of its worker and CLI processes (on RabbitMQ, queues of its
own, deleted afterwards), and waits with ``settle`` for the pipeline to be
done. On Redis that is the queues' join (delayed and unacked messages
counted); RabbitMQ does not count the messages its consumers hold
(app/runtime/brokers.py), so there the test first waits for PostgreSQL to say
every upload is final and every commit notified, then for the queues.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

import redis
import sqlalchemy as sa

from app.db.models import PENDING_STATES, Notification, Upload
from app.runtime.brokers import join_queues, make_broker
from app.settings import Settings
from tests.support.rabbitmq import delete_covworker_queues, require_rabbitmq

#: ``pytest.mark.parametrize("broker", BROKERS)``.
BROKERS = ["redis", "rabbitmq"]


@contextmanager
def broker_env(kind: str, namespace: str) -> Iterator[dict[str, str]]:
    """Extra environment selecting the broker ``kind``; RabbitMQ's queues removed after."""
    if kind == "redis":
        yield {}
        return
    url = require_rabbitmq()
    queue = namespace  # unique per test: the server is shared
    try:
        yield {"COVWORKER_BROKER_URL": url, "COVWORKER_QUEUE_NAME": queue}
    finally:
        delete_covworker_queues(queue)


def settings_of(env: dict[str, str]) -> Settings:
    return Settings(
        redis_url=env["REDIS_URL"],
        database_url=env["DATABASE_URL"],
        namespace=env["COVWORKER_NAMESPACE"],
        broker_url=env.get("COVWORKER_BROKER_URL", ""),
        queue_name=env.get("COVWORKER_QUEUE_NAME", "covworker"),
        broker_maintenance_chance=0,  # requeueing a dead worker's messages is the workers' job
    )


def pipeline_settled(database_url: str) -> bool:
    """Every upload final and every commit with uploads notified, says PostgreSQL."""
    engine = sa.create_engine(database_url)
    try:
        with engine.connect() as conn:
            pending = conn.scalar(
                sa.select(sa.func.count()).where(Upload.state.in_(PENDING_STATES))
            )
            commits = conn.scalar(sa.select(sa.func.count(sa.distinct(Upload.commit_id))))
            notified = conn.scalar(sa.select(sa.func.count(sa.distinct(Notification.commit_id))))
    finally:
        engine.dispose()
    return pending == 0 and notified == commits


def settle(env: dict[str, str], timeout_s: float, interval_ms: int = 100) -> float:
    """Wait until the pipeline of ``env`` is done; the seconds it took."""
    settings = settings_of(env)
    started = time.monotonic()
    deadline = started + timeout_s
    client = redis.Redis.from_url(settings.redis_url)
    broker = make_broker(settings, client, middleware=[])
    try:
        if settings.broker_kind == "rabbitmq":
            database_url = env["DATABASE_URL"]
            while not pipeline_settled(database_url):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"the pipeline did not settle within {timeout_s} s")
                time.sleep(interval_ms / 1000)
        left_ms = max(1, int((deadline - time.monotonic()) * 1000))
        join_queues(broker, settings.queue_names, timeout_ms=left_ms, interval_ms=interval_ms)
    finally:
        broker.close()
        client.close()
    return time.monotonic() - started
