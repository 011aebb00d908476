"""What never changes a gate decision, on real Redis with real worker threads.

A failing metric or log line, ``AgeLimit`` after many deferrals, and a
deferred copy the broker can never accept.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from contextlib import closing
from typing import Any

import dramatiq
import prometheus_client
import pytest
import redis
from dramatiq.brokers.redis import RedisBroker

from middleware import RedisBackend
from tests.middleware.gate.conftest import worker_on
from tests.support.gate.leases import ACQUIRED, take
from tests.support.gate.records import max_running_per_key
from tests.support.gate.scenarios import declare_recorder, new_gate

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

#: The max age of the deferred message's actor: long enough that the first
#: delivery comes before it on a loaded machine.
MAX_AGE_MS = 1_000


def dead_letters(redis_client: redis.Redis, namespace: str, queue: str = "default") -> int:
    return int(redis_client.zcard(f"{namespace}:{queue}.XQ"))


def test_a_metric_or_log_line_that_raises_never_lets_a_message_run_ungated(
    redis_url: str,
    redis_client: redis.Redis,
    namespace: str,
    cleanup: None,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("metrics backend is broken")

    for metric_class, method in [
        (prometheus_client.Counter, "inc"),
        (prometheus_client.Gauge, "inc"),
        (prometheus_client.Histogram, "observe"),
    ]:
        monkeypatch.setattr(metric_class, method, broken)
    gate_logger = logging.getLogger("middleware.gate.per_key_concurrency.PerKeyConcurrency")
    monkeypatch.setattr(gate_logger, "level", logging.DEBUG)
    failing_filter = logging.Filter()
    monkeypatch.setattr(failing_filter, "filter", broken)
    gate_logger.addFilter(failing_filter)
    try:
        broker = RedisBroker(url=redis_url, namespace=namespace)
        broker.add_middleware(new_gate(redis_client, namespace))
        record, state = declare_recorder(broker, limit=1)
        with closing(broker), worker_on(broker, threads=6, timeout_ms=50) as worker:
            for seq in range(30):
                record.send("one-key", seq, 5)
            broker.join(record.queue_name, timeout=60_000)
            worker.join()
    finally:
        gate_logger.removeFilter(failing_filter)

    runs = Counter(seq for _, seq, _, _ in state.runs)
    assert runs == Counter(range(30)), "every message ran exactly once"
    most = max_running_per_key((key, start, end) for key, _, start, end in state.runs)
    assert most == {"one-key": 1}
    assert dead_letters(redis_client, namespace) == 0
    # Never changing a decision, the failures are still seen: one warning a minute.
    seen = [r for r in caplog.records if "Reporting a gate decision failed" in r.getMessage()]
    assert len(seen) == 1 and "metrics backend is broken" in seen[0].getMessage()


def test_a_message_deferred_past_its_max_age_still_runs(
    redis_url: str, redis_client: redis.Redis, namespace: str, cleanup: None
) -> None:
    broker = RedisBroker(url=redis_url, namespace=namespace)  # AgeLimit is on by default
    gate = new_gate(redis_client, namespace, concurrency_delay_ms=50)
    broker.add_middleware(gate)
    ran: list[float] = []
    done = threading.Event()

    @dramatiq.actor(
        broker=broker, concurrency_key=lambda job: job, max_age=MAX_AGE_MS, max_retries=0
    )
    def fresh_only(job: str) -> None:
        ran.append(time.monotonic())
        done.set()

    # Someone else holds the only slot for three times the message's max age.
    held = take(
        RedisBackend(redis_client),
        gate.backend_key("job"),
        "h:other",
        limit=1,
        lease_ms=3 * MAX_AGE_MS,
    )
    assert held.decision == ACQUIRED
    # The worker is up before the send, so the first delivery comes while the
    # message is young (AgeLimit drops a message first delivered past its age,
    # before the gate sees it); every delivery after it is a deferral.
    with closing(broker), worker_on(broker, threads=2, timeout_ms=50):
        sent = time.monotonic()
        message = fresh_only.send("job")
        assert done.wait(timeout=30), "the message ran once the slot was free"
        broker.join(fresh_only.queue_name, timeout=10_000)
    assert len(ran) == 1
    assert ran[0] - sent > MAX_AGE_MS / 1000, "it ran past its max age, not before"
    assert dead_letters(redis_client, namespace) == 0
    assert message.message_id


def test_a_message_that_keeps_its_timestamp_expires_at_its_max_age_and_leaves_no_marker(
    redis_url: str, redis_client: redis.Redis, namespace: str, cleanup: None
) -> None:
    broker = RedisBroker(url=redis_url, namespace=namespace)  # AgeLimit is on by default
    gate = new_gate(redis_client, namespace, concurrency_delay_ms=50)
    broker.add_middleware(gate)
    ran: list[str] = []

    @dramatiq.actor(
        broker=broker,
        concurrency_key=lambda job: job,
        concurrency_skip_if_pending=True,
        concurrency_keep_timestamp=True,
        max_age=MAX_AGE_MS,
        max_retries=0,
    )
    def fresh_only(job: str) -> None:
        ran.append(job)

    held = take(
        RedisBackend(redis_client),
        gate.backend_key("job"),
        "h:other",
        limit=1,
        lease_ms=3 * MAX_AGE_MS,
    )
    assert held.decision == ACQUIRED
    with closing(broker), worker_on(broker, threads=2, timeout_ms=50):
        fresh_only.send("job")
        deadline = time.monotonic() + 30
        while dead_letters(redis_client, namespace) == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        broker.join(fresh_only.queue_name, timeout=10_000)
    assert ran == [], "AgeLimit dropped it: its deferrals counted towards max_age"
    assert dead_letters(redis_client, namespace) == 1
    assert gate.backend.markers(gate.backend_key("job")) == [], "its marker covers no one"


class BoundedDelayBroker(RedisBroker):
    """A broker that refuses delays past its maximum, as brokers document they may."""

    max_delay_ms = 1_000

    def enqueue(self, message: Any, *, delay: int | None = None) -> Any:
        if delay is not None and delay > self.max_delay_ms:
            raise ValueError(f"delay {delay} ms is past this broker's maximum")
        return super().enqueue(message, delay=delay)


def test_a_copy_the_broker_can_never_accept_dead_letters_the_message_and_frees_the_thread(
    redis_url: str, redis_client: redis.Redis, namespace: str, cleanup: None
) -> None:
    broker = BoundedDelayBroker(url=redis_url, namespace=namespace)
    gate = new_gate(redis_client, namespace, concurrency_delay_ms=5_000)
    broker.add_middleware(gate)
    pinged = threading.Event()

    @dramatiq.actor(broker=broker, concurrency_key=lambda job: job, max_retries=0)
    def gated(job: str) -> None:
        raise AssertionError("never runs: its slot is taken")

    @dramatiq.actor(broker=broker, max_retries=0)
    def ping() -> None:
        pinged.set()

    take(RedisBackend(redis_client), gate.backend_key("job"), "h:other", limit=1, lease_ms=60_000)
    gated.send("job")
    ping.send()
    # One thread: a wedge would stop the ping.
    with closing(broker), worker_on(broker, threads=1, timeout_ms=50):
        assert pinged.wait(timeout=30), "the only worker thread went on to the next message"
        broker.join(gated.queue_name, timeout=10_000)
    assert dead_letters(redis_client, namespace) == 1
    assert gate.metrics.registry is not None
    failed = gate.metrics.registry.get_sample_value(
        "dramatiq_gate_deferrals_failed_total", {"queue_name": "default", "actor_name": "gated"}
    )
    assert failed == 1
