from __future__ import annotations

import time
from collections.abc import Iterator

import dramatiq
import fakeredis
import fakeredis.commands_mixins.server_mixin as fake_server
import pytest
import redis
from dramatiq.brokers.stub import StubBroker
from prometheus_client import CollectorRegistry

import middleware.gate_backends.stub as stub_backend
from middleware import GateBackend, PerKeyConcurrency, RedisBackend, StubBackend


class FakeServerClock:
    """The clock of both backends, moved by hand: fakeredis's ``TIME`` (and so
    the gate's Lua scripts) and the ``StubBackend``'s ``time.time``.

    It starts at the real time, since fakeredis expires keys by the real clock.
    """

    def __init__(self) -> None:
        self.now = float(int(time.time()))

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


@pytest.fixture
def gate(backend: GateBackend) -> Iterator[PerKeyConcurrency]:
    gate = PerKeyConcurrency(
        backend=backend,
        key_prefix="test:gate",
        concurrency_delay_ms=5,
        concurrency_jitter_ms=5,
        metrics=True,
        registry=CollectorRegistry(),
    )
    yield gate
    gate.heartbeat.stop()


@pytest.fixture
def stub_broker(gate: PerKeyConcurrency) -> Iterator[StubBroker]:
    broker = StubBroker()
    broker.add_middleware(gate)
    yield broker
    broker.close()


@pytest.fixture
def stub_worker(stub_broker: StubBroker) -> Iterator[dramatiq.Worker]:
    worker = dramatiq.Worker(stub_broker, worker_threads=8, worker_timeout=50)
    worker.start()
    yield worker
    worker.stop()


@pytest.fixture
def cleanup(redis_client: redis.Redis, namespace: str) -> Iterator[None]:
    """The test's keys deleted as soon as it ends (before the fixtures it used)."""
    yield
    for key in redis_client.scan_iter(match=f"{namespace}*"):  # this test's keys only
        redis_client.delete(key)
