"""The gate through real Dramatiq Workers as they start, stop and interrupt
messages: every Worker of a process shares one gate and its heartbeat, and
a message ended by ``TimeLimit`` gives its slot back."""

from __future__ import annotations

import threading
import time
from typing import Any

import dramatiq
import pytest
from dramatiq.brokers.stub import StubBroker
from dramatiq.middleware import Retries, TimeLimit

from middleware import StubBackend
from tests.middleware.gate.conftest import gate_with

pytestmark = pytest.mark.timeout(60)


class Overlap:
    """Counts the messages of one key running at once, and the most ever seen."""

    def __init__(self) -> None:
        self.running = 0
        self.most = 0
        self.started = threading.Event()
        self._lock = threading.Lock()

    def __enter__(self) -> None:
        with self._lock:
            self.running += 1
            self.most = max(self.most, self.running)
        self.started.set()

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self.running -= 1


def test_stopping_one_worker_keeps_renewing_the_leases_of_another_in_the_same_process() -> None:
    # One Worker per queue in one process, as `dramatiq --queues` layouts do:
    # both share the broker's gate and so its heartbeat. The lease (300 ms) is
    # far shorter than the running message (1.5 s): it holds only if renewed.
    broker = StubBroker()
    overlap = Overlap()
    options: dict[str, Any] = {"concurrency_lease_ms": 300, "concurrency_jitter_ms": 0}
    with gate_with(backend=StubBackend(), concurrency_delay_ms=20, **options) as gate:
        broker.add_middleware(gate)

        @dramatiq.actor(broker=broker, queue_name="other", concurrency_key=lambda job: job)
        def other(job: str) -> None: ...

        @dramatiq.actor(broker=broker, queue_name="long", concurrency_key=lambda job, s: job)
        def long(job: str, seconds: float) -> None:
            with overlap:
                time.sleep(seconds)

        first = dramatiq.Worker(broker, queues={"other"}, worker_threads=1, worker_timeout=50)
        second = dramatiq.Worker(broker, queues={"long"}, worker_threads=2, worker_timeout=50)
        first.start()
        second.start()
        try:
            long.send("k", 1.5)
            assert overlap.started.wait(10)
            first.stop()  # the other Worker's message is still running
            long.send("k", 0.01)  # deferred until the first is done, however long
            broker.join("long", timeout=20_000)
            second.join()
        finally:
            first.stop()
            second.stop()
            broker.close()
    assert overlap.most == 1, "two messages of one key ran at once with limit 1"
    assert gate.backend.holders(gate.backend_key("k")) == []


def test_a_message_interrupted_by_its_time_limit_gives_its_slot_back() -> None:
    broker = StubBroker(middleware=[TimeLimit(interval=10), Retries()])
    broker.emit_after("process_boot")  # starts TimeLimit's monitor, as `dramatiq` does
    ran: list[str] = []
    with gate_with(backend=StubBackend(), concurrency_delay_ms=20) as gate:
        broker.add_middleware(gate)

        @dramatiq.actor(
            broker=broker, concurrency_key=lambda job, n: job, time_limit=200, max_retries=0
        )
        def slow(job: str, name: str) -> None:
            ran.append(name)
            if name == "interrupted":
                for _ in range(1000):  # TimeLimit's exception lands between steps
                    time.sleep(0.01)

        worker = dramatiq.Worker(broker, worker_threads=2, worker_timeout=50)
        worker.start()
        try:
            slow.send("k", "interrupted")
            started = time.monotonic()
            broker.join(slow.queue_name, timeout=10_000, fail_fast=False)
            assert time.monotonic() - started < 5, "the time limit ended it"
            assert gate.backend.holders(gate.backend_key("k")) == [], "its slot is back"
            slow.send("k", "next")
            broker.join(slow.queue_name, timeout=10_000, fail_fast=False)
        finally:
            worker.stop()
            broker.close()
    assert ran == ["interrupted", "next"]
    assert len(broker.dead_letters) == 1, "the interrupted one failed for good"
