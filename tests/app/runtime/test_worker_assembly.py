"""How build_app assembles the broker: middleware order and the actors' gate options."""

from __future__ import annotations

from pathlib import Path

import dramatiq
import fakeredis
import pytest

from app.runtime.worker import build_app, build_broker
from tests.support.pipeline import sqlite_settings

pytestmark = pytest.mark.timeout(30)


def names(middleware: list[object]) -> list[str]:
    return [type(m).__name__ for m in middleware]


def test_malformed_messages_are_refused_before_the_gate_takes_a_slot(tmp_path: Path) -> None:
    broker = build_broker(sqlite_settings(tmp_path), fakeredis.FakeRedis())
    order = names(broker.middleware)
    assert order.index("ArgumentValidation") < order.index("PerKeyConcurrency")
    assert order.index("ArgumentValidation") < order.index("Retries")


def test_with_metrics_on_the_gate_comes_after_dramatiqs_prometheus(tmp_path: Path) -> None:
    broker = build_broker(sqlite_settings(tmp_path, metrics=True), fakeredis.FakeRedis())
    order = names(broker.middleware)
    assert order.index("Prometheus") < order.index("PerKeyConcurrency")


def test_the_gate_takes_its_tunables_from_settings(tmp_path: Path) -> None:
    settings = sqlite_settings(
        tmp_path, gate_lease_ms=9_000, gate_delay_ms=70, gate_pending_ttl_ms=5_000
    )
    app = build_app(settings, redis_client=fakeredis.FakeRedis())
    try:
        gate = app.gate
        assert gate.pending_ttl_ms == 5_000
        assert (gate.defaults.lease_ms, gate.defaults.delay_ms) == (9_000, 70)
    finally:
        app.close()


def test_the_finisher_and_bulk_queues_follow_the_queue_name_or_are_the_same_queue(
    tmp_path: Path,
) -> None:
    named = sqlite_settings(tmp_path, queue_name="ci").queue_names
    assert named == ("ci", "ci.finish", "ci.bulk")
    one = sqlite_settings(tmp_path, finisher_queue_name="covworker", bulk_queue_name="covworker")
    assert one.queue_names == ("covworker",)
    broker = build_broker(one, fakeredis.FakeRedis())
    assert broker.consume("covworker", 2, 1000).timeout == 1000  # no fast polling then


def test_consumers_of_the_finisher_queue_poll_an_idle_queue_every_100_ms(tmp_path: Path) -> None:
    broker = build_broker(sqlite_settings(tmp_path), fakeredis.FakeRedis())
    # What `dramatiq` passes: its worker timeout, 1 s by default.
    queues = ("covworker", "covworker.DQ", "covworker.finish", "covworker.finish.DQ")
    timeouts = {q: broker.consume(q, 2, 1000).timeout for q in queues}
    assert timeouts["covworker.finish"] == timeouts["covworker.finish.DQ"] == 100
    assert timeouts["covworker"] == timeouts["covworker.DQ"] == 1000
    assert broker.consume("covworker.bulk", 2, 1000).timeout == 1000  # a backlog's, not waited on


def test_a_worker_makes_its_metrics_and_configures_its_mappers_at_boot_not_in_its_first_message(
    tmp_path: Path,
) -> None:
    app = build_app(sqlite_settings(tmp_path), redis_client=fakeredis.FakeRedis())
    try:
        assert not app.services.metrics._made
        boot_hooks = ("MetricsAtBoot", "MappersAtBoot")
        at_boot = [m for m in app.broker.middleware if type(m).__name__ in boot_hooks]
        assert len(at_boot) == 2
        for middleware in at_boot:
            middleware.after_worker_boot(app.broker, None)  # type: ignore[arg-type]
        assert app.services.metrics._made, "the metrics were made at boot"
        from sqlalchemy.orm import Mapper

        from app.db.models import Upload

        mapper = Upload.__mapper__
        assert isinstance(mapper, Mapper) and mapper.configured, "the mappers were configured"
    finally:
        app.close()


@pytest.mark.parametrize(
    ("told", "consumed"),
    [
        ({"covworker"}, {"covworker", "covworker.bulk"}),
        ({"covworker.finish"}, {"covworker.finish"}),
        (None, {"covworker", "covworker.finish", "covworker.bulk"}),
    ],
)
def test_a_worker_told_to_consume_the_shared_queue_consumes_its_bulk_queue_too(
    tmp_path: Path, told: set[str] | None, consumed: set[str]
) -> None:
    app = build_app(sqlite_settings(tmp_path), redis_client=fakeredis.FakeRedis())
    worker = dramatiq.Worker(app.broker, queues=told, worker_threads=1, worker_timeout=50)
    worker.start()
    try:
        # One consumer per queue and one per its delayed messages.
        assert {q.removesuffix(".DQ") for q in worker.consumers} == consumed
    finally:
        worker.stop()
        app.close()
