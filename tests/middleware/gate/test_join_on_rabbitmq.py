"""What ``RabbitmqBroker.join`` waits for with the gate (docs/gate.md, "Waiting
for gated messages"): not for a deferred copy, which a worker holds unacked
until it is due; a message's result does wait for it. On the shared RabbitMQ,
in queues of the test's own."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator

import dramatiq
import pytest
from dramatiq.brokers.rabbitmq import RabbitmqBroker
from dramatiq.results import Results
from dramatiq.results.backends import StubBackend as ResultsStubBackend

from middleware import StubBackend
from tests.middleware.gate.conftest import gate_with, worker_on
from tests.support.rabbitmq import delete_queues, require_rabbitmq

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


@pytest.fixture
def queue() -> Iterator[str]:
    name = f"cwt-join-{uuid.uuid4().hex[:8]}"
    yield name
    delete_queues([name])


def test_join_returns_while_a_deferred_copy_waits_and_its_result_does_not(queue: str) -> None:
    broker = RabbitmqBroker(url=require_rabbitmq())
    results = ResultsStubBackend()
    broker.add_middleware(Results(backend=results))
    release = threading.Event()
    ran: list[str] = []
    with gate_with(backend=StubBackend(), concurrency_delay_ms=6_000) as gate:
        broker.add_middleware(gate)

        @dramatiq.actor(
            broker=broker, queue_name=queue, concurrency_key=lambda name: "k", store_results=True
        )
        def job(name: str) -> str:
            if name == "holder":
                release.wait(10)
            ran.append(name)
            return name

        with worker_on(broker, threads=2, timeout_ms=100):
            job.send("holder")
            deadline = time.monotonic() + 10
            while not gate.backend.holders(gate.backend_key("k")) and time.monotonic() < deadline:
                time.sleep(0.02)
            waiting = job.send("waiting")  # over the limit: deferred by 6 s
            time.sleep(1)
            release.set()
            broker.join(queue, min_successes=5, timeout=30_000)
            assert "waiting" not in ran, "join returned while the deferred copy waited"
            assert waiting.get_result(backend=results, block=True, timeout=30_000) == "waiting"
        broker.close()
    assert ran == ["holder", "waiting"]
