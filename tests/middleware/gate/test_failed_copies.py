"""A deferred copy the broker refuses, on real Redis: held while Redis may recover,
given up (marker removed, original dead-lettered) when it never can.

The gate's leases are on the shared test Redis; where Redis itself must
refuse writes (``OOM``), the broker runs on a private ``redis-server`` of the
test's own, whose ``maxmemory`` the test lowers and raises again.
"""

from __future__ import annotations

import threading
from contextlib import closing
from pathlib import Path
from typing import Any

import dramatiq
import pytest
import redis
from dramatiq.brokers.redis import RedisBroker
from dramatiq.middleware import SkipMessage

from middleware.gate._options import DEFERRALS, DeferralFailedError, DeferralNotEnqueuedError
from tests.middleware.gate.conftest import worker_on
from tests.support.gate.leases import ACQUIRED, take
from tests.support.gate.scenarios import delivery, metric, new_gate
from tests.support.private_services import private_redis

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def declare_coalescing(broker: dramatiq.Broker) -> dramatiq.Actor[Any, Any]:
    @dramatiq.actor(
        broker=broker,
        concurrency_key=lambda job: job,
        concurrency_limit=1,
        concurrency_skip_if_pending=True,
        max_retries=0,
    )
    def fungible(job: str) -> None:
        raise AssertionError("never runs: its slot is taken")

    return fungible


class RefusingBroker(RedisBroker):
    """Refuses deferred copies: the first ``transient`` with a connection error, then for good."""

    def __init__(self, *, transient: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.transient = transient
        self.refused = 0

    def enqueue(self, message: Any, *, delay: int | None = None) -> Any:
        if DEFERRALS in message.options:
            self.refused += 1
            if self.refused <= self.transient:
                raise redis.ConnectionError("Connection reset by peer")
            raise ValueError(f"delay {delay} ms is past this broker's maximum")
        return super().enqueue(message, delay=delay)


def test_a_copy_that_can_never_be_enqueued_takes_its_marker_away(
    redis_url: str, redis_client: redis.Redis, namespace: str, cleanup: None
) -> None:
    broker = RefusingBroker(transient=0, url=redis_url, namespace=namespace)
    gate = new_gate(redis_client, namespace)
    broker.add_middleware(gate)
    fungible = declare_coalescing(broker)
    take(gate.backend, gate.backend_key("job"), "h:other", limit=1, lease_ms=60_000)

    first = delivery(fungible, "job")
    with pytest.raises(DeferralFailedError, match="can never be enqueued: ValueError"):
        broker.emit_before("process_message", first)
    assert first.failed, "dead-lettered: its copy can never be enqueued"
    assert gate.backend.markers(gate.backend_key("job")) == [], "no marker without a copy"

    # The next message of the key is not acked as covered by a copy that does
    # not exist: it is deferred itself (its copy refused too, so dead-lettered).
    second = delivery(fungible, "job")
    with pytest.raises(DeferralFailedError, match="can never be enqueued: ValueError"):
        broker.emit_before("process_message", second)
    assert metric(gate, "dramatiq_gate_skipped_pending", "fungible") == 0
    assert metric(gate, "dramatiq_gate_deferrals_failed", "fungible") == 2
    broker.close()


def test_a_held_copy_that_turns_out_never_to_fit_dead_letters_its_message_with_the_reason(
    redis_url: str,
    redis_client: redis.Redis,
    namespace: str,
    cleanup: None,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(dramatiq.worker, "POST_PROCESS_MESSAGE_RETRY_DELAY_SECS", 0.01)
    broker = RefusingBroker(transient=1, url=redis_url, namespace=namespace)
    gate = new_gate(redis_client, namespace)
    broker.add_middleware(gate)
    fungible = declare_coalescing(broker)
    nacked = threading.Event()

    class NackWatch(dramatiq.Middleware):
        def after_nack(self, broker: dramatiq.Broker, message: Any) -> None:
            nacked.set()

    broker.add_middleware(NackWatch())
    take(gate.backend, gate.backend_key("job"), "h:other", limit=1, lease_ms=60_000)
    fungible.send("job")
    with closing(broker), worker_on(broker, threads=1, timeout_ms=20):
        assert nacked.wait(timeout=30), "the original was dead-lettered, not left unacked"
        broker.join(fungible.queue_name, timeout=10_000)
    assert redis_client.zcard(f"{namespace}:default.XQ") == 1
    assert gate.backend.markers(gate.backend_key("job")) == []
    assert "its deferred copy can never be enqueued: ValueError" in caplog.text


def test_a_copy_refused_while_redis_is_out_of_memory_holds_its_original_until_it_is_enqueued(
    redis_client: redis.Redis, namespace: str, cleanup: None, tmp_path: Path
) -> None:
    with private_redis(tmp_path / "broker-redis") as server:
        broker = RedisBroker(url=server.url, namespace=namespace)
        gate = new_gate(redis_client, namespace)
        broker.add_middleware(gate)
        fungible = declare_coalescing(broker)
        held = take(gate.backend, gate.backend_key("job"), "h:other", limit=1, lease_ms=60_000)
        assert held.decision == ACQUIRED
        admin = server.client()
        admin.config_set("maxmemory", 1)  # every write refused: OOM
        try:
            waiting = delivery(fungible, "job")
            with pytest.raises(SkipMessage):
                broker.emit_before("process_message", waiting)
            assert not waiting.failed, "OOM may pass: held, never dead-lettered"
            marker = gate.backend.markers(gate.backend_key("job"))
            assert len(marker) == 1, "its marker stands for the copy still to come"
            with pytest.raises(DeferralNotEnqueuedError):  # the worker retries the ack
                gate.before_ack(broker, waiting)
        finally:
            admin.config_set("maxmemory", 0)
        gate.before_ack(broker, waiting)  # memory back: the copy goes, the ack may follow
        copies = admin.lrange(f"{namespace}:default.DQ", 0, -1)
        assert len(copies) == 1
        assert not waiting.failed
        admin.close()
        broker.close()
