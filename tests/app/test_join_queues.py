"""join_queues: waiting for messages that hop between queues, on real Redis."""

from __future__ import annotations

import threading

import dramatiq
import pytest
from dramatiq import Worker
from dramatiq.brokers.redis import RedisBroker
from dramatiq.errors import QueueJoinTimeout

from app.worker import join_queues
from tests.support.services import require_redis

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

HOPS = 20


def test_a_chain_of_messages_across_two_queues_is_waited_for_to_its_end(namespace: str) -> None:
    """Each message sends the next on the other queue before it is acked, so
    at times one queue is empty while the other still works: joining each
    queue once would return early."""
    client = require_redis()
    broker = RedisBroker(client=client, namespace=f"{namespace}-dramatiq", middleware=[])
    done: list[int] = []
    lock = threading.Lock()

    @dramatiq.actor(broker=broker, queue_name="first")
    def ping(n: int) -> None:
        pong.send(n + 1)

    @dramatiq.actor(broker=broker, queue_name="second")
    def pong(n: int) -> None:
        with lock:
            done.append(n)
        if n < HOPS:
            ping.send(n + 1)

    ping.send(0)
    worker = Worker(broker, worker_threads=2, worker_timeout=20)
    worker.start()
    try:
        join_queues(broker, ["second", "first"], timeout_ms=30_000, interval_ms=5)
        assert done == list(range(1, HOPS + 2, 2))  # pong(1), pong(3), ... pong(21)
    finally:
        worker.stop()
        for key in client.scan_iter(f"{namespace}*"):
            client.delete(key)


def test_it_gives_up_after_the_timeout(namespace: str) -> None:
    client = require_redis()
    broker = RedisBroker(client=client, namespace=f"{namespace}-dramatiq", middleware=[])

    @dramatiq.actor(broker=broker, queue_name="stuck")
    def never_run() -> None:  # no worker consumes it
        raise AssertionError("no worker runs this")

    never_run.send()
    try:
        with pytest.raises(QueueJoinTimeout):
            join_queues(broker, ["stuck"], timeout_ms=200, interval_ms=20)
    finally:
        for key in client.scan_iter(f"{namespace}*"):
            client.delete(key)
