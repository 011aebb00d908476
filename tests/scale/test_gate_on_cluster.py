"""The per-key gate on a real Redis Cluster, with RabbitMQ carrying the messages.

Many keys spread over every shard, real Dramatiq worker threads: no key ever
runs more than its limit, every message runs exactly once, none is
dead-lettered, and the gate leaves no key behind.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator

import dramatiq
import pytest

from app.runtime.brokers import inspector_of, join_queues, rabbitmq_broker_class
from app.runtime.cluster import cluster_client
from tests.support.gate.records import max_running_per_key
from tests.support.gate.scenarios import new_gate
from tests.support.rabbitmq import delete_queues, require_rabbitmq
from tests.support.redis_cluster import RedisClusterNodes

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

KEYS = [f"commit-{k}" for k in range(24)]
MESSAGES = 480
LIMIT = 2


@pytest.fixture
def queue(namespace: str) -> Iterator[str]:
    require_rabbitmq()
    yield namespace
    delete_queues([namespace])


def test_many_keys_across_every_shard_never_exceed_the_limit_and_lose_nothing(
    cluster: RedisClusterNodes, namespace: str, queue: str
) -> None:
    client = cluster_client(cluster.url)
    gate = new_gate(
        client, namespace, concurrency_jitter_ms=80, concurrency_lease_ms=5000, metrics=False
    )
    shards = {cluster.primary_of_key(f"{namespace}:gate:{{{key}}}") for key in KEYS}
    assert len(shards) == 3, "the keys must land on every primary"
    broker = rabbitmq_broker_class()(  # type: ignore[call-arg]
        url=require_rabbitmq(), fast_queues=(), fast_poll_ms=100
    )
    broker.add_middleware(gate)
    runs: list[tuple[str, int, float, float]] = []
    lock = threading.Lock()

    @dramatiq.actor(
        broker=broker,
        queue_name=queue,
        concurrency_key=lambda key, seq: key,
        concurrency_limit=LIMIT,
        max_retries=0,
    )
    def record(key: str, seq: int) -> None:
        start = time.monotonic()
        time.sleep(0.005 + seq % 3 * 0.005)
        with lock:
            runs.append((key, seq, start, time.monotonic()))

    worker = dramatiq.Worker(broker, worker_threads=8, worker_timeout=100)
    worker.start()
    try:
        for seq in range(MESSAGES):  # runs of 4 of one key: always over its limit
            record.send(KEYS[seq // 4 % len(KEYS)], seq)
        deadline = time.monotonic() + 150
        while len(runs) < MESSAGES and time.monotonic() < deadline:
            time.sleep(0.1)
        join_queues(broker, [queue], timeout_ms=30_000, interval_ms=50)
        worker.join()
    finally:
        worker.stop()
        gate.heartbeat.stop()
    state = inspector_of(broker).queue_state(queue)
    broker.close()
    try:
        most = max_running_per_key([(key, start, end) for key, _, start, end in runs])
        assert Counter(seq for _, seq, _, _ in runs) == Counter(range(MESSAGES))
        assert max(most.values()) <= LIMIT, most
        assert sum(v == LIMIT for v in most.values()) >= len(KEYS) // 2, "not a mutex"
        assert state.dead == 0
        assert list(client.scan_iter(match=f"{namespace}:gate:*")) == []
    finally:
        for key in client.scan_iter(match=f"{namespace}:*"):
            client.delete(key)
        client.close()
