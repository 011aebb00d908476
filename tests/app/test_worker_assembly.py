"""How build_app assembles the broker: middleware order and the actors' gate options."""

from __future__ import annotations

from pathlib import Path

import fakeredis
import pytest

from app.worker import build_app, build_broker
from middleware import ArgumentValidation, PerKeyConcurrency
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


def test_finisher_and_notify_are_gated_per_commit_and_the_processor_is_not(tmp_path: Path) -> None:
    app = build_app(
        sqlite_settings(tmp_path, finisher_concurrency=5), redis_client=fakeredis.FakeRedis()
    )
    from app import actors

    try:
        finisher, notify = actors.upload_finisher.options, actors.notify.options
        assert "concurrency_limit" not in finisher
        assert app.gate.defaults.limit == 5, "the finisher's limit is the gate's default"
        assert finisher["concurrency_skip_if_pending"] is True
        assert notify["concurrency_limit"] == 1
        assert finisher["concurrency_key"](7, 42) == "7:42"
        assert "concurrency_key" not in actors.upload_processor.options
        assert isinstance(app.gate, PerKeyConcurrency)
        assert any(isinstance(m, ArgumentValidation) for m in app.broker.middleware)
    finally:
        app.close()


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


def test_the_commit_key_is_called_like_the_actor() -> None:
    from app.actors import commit_key  # the key PER_COMMIT gives the gate

    assert commit_key(1, 2) == "1:2"
    assert commit_key(repoid=3, commitid=4) == "3:4"


def test_the_actors_are_module_level_and_follow_the_app_built_last(tmp_path: Path) -> None:
    import app.actors as actors

    first = build_app(sqlite_settings(tmp_path), redis_client=fakeredis.FakeRedis())
    second = build_app(
        sqlite_settings(tmp_path, queue_name="other"), redis_client=fakeredis.FakeRedis()
    )
    try:
        assert {a.actor_name for a in actors.ACTORS} == {
            "upload_processor",
            "payload_arrival",
            "upload_finisher",
            "notify",
            "deliver_webhook",
            "deliver_pull",
            "sweep",
        }
        for actor in actors.ACTORS:
            assert actor.broker is second.broker
            assert second.broker.get_actor(actor.actor_name) is actor
            expected = "other.finish" if actor.actor_name in actors.ON_FINISHER_QUEUE else "other"
            assert actor.queue_name == expected
        assert actors.upload_finisher.broker is second.broker
        assert actors.services() is second.services
    finally:
        first.close()
        second.close()


def test_notify_and_finishers_sent_ahead_use_the_finisher_queue_and_processors_run_last(
    tmp_path: Path,
) -> None:
    import dramatiq

    import app.actors as actors

    covworker = build_app(sqlite_settings(tmp_path), redis_client=fakeredis.FakeRedis())
    broker = covworker.broker
    try:
        assert covworker.settings.queue_names == ("covworker", "covworker.finish")
        assert {"covworker", "covworker.finish"} <= broker.get_declared_queues()
        assert actors.notify.queue_name == "covworker.finish"
        # A webhook is not held behind the processors either.
        assert actors.deliver_webhook.queue_name == "covworker.finish"
        assert actors.upload_finisher.queue_name == "covworker"
        others = [a for a in actors.ACTORS if a is not actors.upload_processor]
        assert all(actors.upload_processor.priority > a.priority for a in others)

        actors.send_finisher(1, 2)
        actors.send_finisher_ahead(3, 4)

        def queued(queue: str) -> list[tuple[str, tuple[int, ...]]]:
            raw = broker.client.hvals(f"{broker.namespace}:{queue}.msgs")
            found = [dramatiq.Message.decode(m) for m in raw]
            return [(m.actor_name, tuple(m.args)) for m in found]

        assert queued("covworker") == [("upload_finisher", (1, 2))]
        assert queued("covworker.finish") == [("upload_finisher", (3, 4))]
    finally:
        covworker.close()


def test_the_finisher_queue_follows_the_queue_name_or_is_the_same_queue(tmp_path: Path) -> None:
    assert sqlite_settings(tmp_path, queue_name="ci").queue_names == ("ci", "ci.finish")
    one = sqlite_settings(tmp_path, finisher_queue_name="covworker")
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
