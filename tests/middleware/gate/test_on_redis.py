"""The gate on real Redis, with real Dramatiq worker threads."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from typing import Any

import dramatiq
import pytest
import redis
from dramatiq.broker import MessageProxy
from dramatiq.brokers.redis import RedisBroker

from middleware import PerKeyConcurrency, RedisBackend
from tests.middleware.gate.conftest import gate_with, worker_on
from tests.support.gate.leases import DEFER, take
from tests.support.gate.records import max_running_per_key
from tests.support.gate.scenarios import (
    assert_no_item_lost,
    coalescing_finisher,
    declare_recorder,
    metric,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


@pytest.fixture
def gate(redis_client: redis.Redis, namespace: str) -> Iterator[PerKeyConcurrency]:
    with gate_with(
        client=redis_client,
        key_prefix=f"{namespace}:gate",
        concurrency_delay_ms=20,
        concurrency_jitter_ms=80,
        concurrency_lease_ms=2000,
    ) as gate:
        yield gate


@pytest.fixture
def broker(
    redis_url: str, namespace: str, gate: PerKeyConcurrency, redis_client: redis.Redis
) -> Iterator[RedisBroker]:
    client = redis_client
    broker = RedisBroker(url=redis_url, namespace=namespace)
    broker.add_middleware(gate)
    yield broker
    broker.close()
    for key in client.scan_iter(match=f"{namespace}:*"):  # this test's keys only
        client.delete(key)


@pytest.fixture
def worker(broker: RedisBroker) -> Iterator[dramatiq.Worker]:
    with worker_on(broker, threads=8, timeout_ms=100) as worker:
        yield worker


def dead_letters(client: redis.Redis, namespace: str, queue: str) -> int:
    return int(client.zcard(f"{namespace}:{queue}.XQ"))


def test_hundreds_of_messages_over_several_keys_never_run_more_than_the_limit_per_key(
    broker: RedisBroker,
    worker: dramatiq.Worker,
    gate: PerKeyConcurrency,
    redis_client: redis.Redis,
    namespace: str,
) -> None:
    record, state = declare_recorder(broker, limit=2)
    keys = [f"commit-{k}" for k in range(5)]
    for seq in range(300):  # runs of 4 of one key: more than its limit are always in flight
        record.send(keys[seq // 4 % 5], seq, 5 + seq % 4 * 5)
    broker.join(record.queue_name, timeout=90_000)
    worker.join()

    most = max_running_per_key((key, start, end) for key, _, start, end in state.runs)
    assert max(most.values()) <= 2, most
    assert set(most.values()) == {2}, "every key reached its limit: the gate is not a mutex"
    assert Counter(seq for _, seq, _, _ in state.runs) == Counter(range(300))
    assert dead_letters(redis_client, namespace, record.queue_name) == 0
    assert metric(gate, "dramatiq_gate_acquired", "record") == 300
    assert metric(gate, "dramatiq_gate_released", "record") == 300
    assert metric(gate, "dramatiq_gate_deferred", "record") > 0
    assert redis_client.keys(f"{namespace}:gate:*") == []


def test_coalescing_a_stampede_loses_no_work_on_redis(
    broker: RedisBroker, worker: dramatiq.Worker, gate: PerKeyConcurrency
) -> None:
    state = coalescing_finisher(broker, commits=3, items=240)
    worker.join()
    assert_no_item_lost(state, gate, items=240)


def test_coalescing_a_stampede_at_enqueue_loses_no_work_on_redis(
    broker: RedisBroker, worker: dramatiq.Worker, gate: PerKeyConcurrency
) -> None:
    state = coalescing_finisher(broker, commits=3, items=240, send_through=gate)
    worker.join()
    assert_no_item_lost(state, gate, items=240, skipped_at="enqueue")
    delivered = metric(gate, "dramatiq_gate_acquired", "finisher") + metric(
        gate, "dramatiq_gate_deferred", "finisher"
    )
    assert delivered < 240 / 4, "most sends were dropped before the broker"


def test_a_long_running_holder_keeps_its_slot_for_many_leases(
    broker: RedisBroker, gate: PerKeyConcurrency, redis_client: redis.Redis
) -> None:
    record, _ = declare_recorder(broker, limit=1, concurrency_lease_ms=300)
    renewals = count_renewals(gate)
    holder = MessageProxy(record.message("k", 1, 0))
    gate.before_process_message(broker, holder)
    try:
        # Twelve renewals, about a third of a lease apart: three leases have passed.
        assert renewals.wait_for(12, timeout=30)
        outcome = take(
            RedisBackend(redis_client), gate.backend_key("k"), "h:late", limit=1, lease_ms=300
        )
        assert (outcome.decision, outcome.reclaimed) == (DEFER, 0)
    finally:
        gate.after_process_message(broker, holder)
    assert redis_client.zcard(gate.backend_key("k")) == 0
    assert metric(gate, "dramatiq_gate_leases_lost", "record") == 0


class RenewalCount:
    """Counts the renewals that reached Redis, for a test to wait on."""

    def __init__(self) -> None:
        self.count = 0
        self.changed = threading.Condition()

    def wait_for(self, count: int, timeout: float) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: self.count >= count, timeout)


def count_renewals(gate: PerKeyConcurrency) -> RenewalCount:
    counted = RenewalCount()
    renew = gate.backend.renew

    def counting(key: str, leases: Any) -> list[str]:
        lost = renew(key, leases)
        with counted.changed:
            counted.count += len(leases)
            counted.changed.notify_all()
        return lost

    gate.backend.renew = counting  # type: ignore[method-assign]
    return counted
