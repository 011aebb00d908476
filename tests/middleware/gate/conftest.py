from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import dramatiq
import fakeredis
import fakeredis.commands_mixins.server_mixin as fake_server
import pytest
import redis
from dramatiq.brokers.stub import StubBroker
from prometheus_client import CollectorRegistry

import middleware.gate.backends.stub as stub_backend
from middleware import GateBackend, PerKeyConcurrency, RedisBackend, StubBackend


class FakeServerClock:
    """The clock of both backends, moved by hand: fakeredis's ``TIME`` (and so
    the gate's Lua scripts) and the ``StubBackend``'s ``time.time``.

    It starts a minute after the real time, on a whole second: fakeredis
    expires keys by the real clock, and a gate key's expiry is set from this
    one (``PEXPIREAT``, a second past its last lease), so a key must not
    expire by the real clock while a test on a loaded machine still reads
    it (a clock on the real second, truncated, would leave about one real
    second).
    """

    #: How far ahead of the real time the clock starts (s).
    AHEAD_S = 60

    def __init__(self) -> None:
        self.now = float(int(time.time()) + self.AHEAD_S)

    def time(self) -> float:
        return self.now

    def advance_ms(self, ms: float) -> None:
        self.now += ms / 1000


@pytest.fixture
def server_clock(monkeypatch: pytest.MonkeyPatch) -> FakeServerClock:
    clock = FakeServerClock()
    monkeypatch.setattr(fake_server, "time", clock)
    monkeypatch.setattr(stub_backend, "time", clock)
    return clock


@pytest.fixture
def fake_redis() -> Iterator[fakeredis.FakeRedis]:
    client = fakeredis.FakeRedis()
    yield client
    client.close()


@pytest.fixture(params=["redis", "stub"])
def backend(request: pytest.FixtureRequest, fake_redis: fakeredis.FakeRedis) -> GateBackend:
    """Each gate test runs on both backends: the Lua scripts (on fakeredis) and the stub.

    As Dramatiq's ``rate_limiter_backend`` fixture; the gate on real Redis
    and real workers is tested in ``test_gate_on_redis.py`` and beside it.
    """
    if request.param == "redis":
        return RedisBackend(fake_redis)
    return StubBackend()


@contextmanager
def gate_with(**options: Any) -> Iterator[PerKeyConcurrency]:
    """A gate with ``options``, counting into its own metrics registry; its
    heartbeat's thread stopped when the test is done with it."""
    gate = PerKeyConcurrency(metrics=True, registry=CollectorRegistry(), **options)
    try:
        yield gate
    finally:
        gate.heartbeat.stop()


@pytest.fixture
def gate(backend: GateBackend) -> Iterator[PerKeyConcurrency]:
    with gate_with(
        backend=backend, key_prefix="test:gate", concurrency_delay_ms=5, concurrency_jitter_ms=5
    ) as gate:
        yield gate


@pytest.fixture
def stub_broker(gate: PerKeyConcurrency) -> Iterator[StubBroker]:
    broker = StubBroker()
    broker.add_middleware(gate)
    yield broker
    broker.close()


@contextmanager
def worker_on(
    broker: dramatiq.Broker, *, threads: int, timeout_ms: int
) -> Iterator[dramatiq.Worker]:
    """A started worker of ``threads`` threads on ``broker``, stopped when done.

    ``timeout_ms``: how long its threads wait on the queue between checks for stop.
    """
    worker = dramatiq.Worker(broker, worker_threads=threads, worker_timeout=timeout_ms)
    worker.start()
    try:
        yield worker
    finally:
        worker.stop()


@pytest.fixture
def stub_worker(stub_broker: StubBroker) -> Iterator[dramatiq.Worker]:
    with worker_on(stub_broker, threads=8, timeout_ms=50) as worker:
        yield worker


@pytest.fixture
def cleanup(redis_client: redis.Redis, namespace: str) -> Iterator[None]:
    """The test's keys deleted as soon as it ends (before the fixtures it used)."""
    yield
    for key in redis_client.scan_iter(match=f"{namespace}*"):  # this test's keys only
        redis_client.delete(key)
