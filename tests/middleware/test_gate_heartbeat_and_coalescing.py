"""Lease renewal and coalescing on both backends and a stub broker."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import pytest
from dramatiq.broker import MessageProxy
from dramatiq.brokers.stub import StubBroker

from middleware import GateBackend, PerKeyConcurrency
from middleware.gate_backends import DEFER
from middleware.gate_leases import Heartbeat, Holding
from tests.middleware.conftest import FakeServerClock
from tests.support.gate.leases import ACQUIRED, expiry, stored_keys, take
from tests.support.gate.scenarios import (
    assert_no_item_lost,
    coalescing_finisher,
    declare_recorder,
    metric,
)

pytestmark = pytest.mark.timeout(60)

KEY = "test:gate:{k}"


class Monotonic:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_holder_is_renewed_once_a_third_of_its_lease_has_passed(
    backend: GateBackend, server_clock: FakeServerClock
) -> None:
    leases = backend
    clock = Monotonic()
    lost: list[Holding] = []
    heartbeat = Heartbeat(leases, on_lost=lost.append, clock=clock)
    take(leases, KEY, "h:a", limit=1, lease_ms=900)
    holding = Holding(None, "k", KEY, "h:a", 900)
    heartbeat.add(holding)
    heartbeat.stop()  # drive renewals by hand
    first_expiry = expiry(backend, KEY, "h:a")

    clock.now += 0.2
    server_clock.advance_ms(200)
    assert heartbeat.renew_due() == pytest.approx(0.1)  # seconds until it is due
    assert expiry(backend, KEY, "h:a") == first_expiry

    for _ in range(10):  # ten thirds of a lease: three leases and more
        clock.now += 0.3
        server_clock.advance_ms(300)
        heartbeat.renew_due()
    assert expiry(backend, KEY, "h:a") == pytest.approx(server_clock.now * 1000 + 900, abs=1)
    assert take(leases, KEY, "h:b", limit=1, lease_ms=900).decision == DEFER
    assert lost == []


def test_a_holding_released_while_its_renewal_runs_is_not_reported_lost(
    backend: GateBackend, server_clock: FakeServerClock
) -> None:
    leases = backend
    clock = Monotonic()
    lost: list[Holding] = []
    heartbeat = Heartbeat(leases, on_lost=lost.append, clock=clock)
    take(leases, KEY, "h:a", limit=1, lease_ms=900)
    holding = Holding(None, "k", KEY, "h:a", 900)
    heartbeat.add(holding)
    heartbeat.stop()

    renew = leases.renew

    def release_first(key: str, due: Sequence[tuple[str, int]]) -> list[str]:
        heartbeat.forget(holding)  # the worker thread finishes in between
        leases.release(KEY, "h:a")
        return renew(key, due)

    leases.renew = release_first  # type: ignore[method-assign,assignment]
    clock.now += 1
    heartbeat.renew_due()
    assert lost == []
    assert KEY not in stored_keys(backend), "a released lease is never brought back"


def test_a_lease_reclaimed_under_a_running_holder_is_reported_once(
    stub_broker: StubBroker,
    gate: PerKeyConcurrency,
    server_clock: FakeServerClock,
) -> None:
    record, _ = declare_recorder(stub_broker, limit=1, concurrency_lease_ms=100)
    clock = Monotonic()
    gate.heartbeat.clock = clock
    message = MessageProxy(record.message("k", 1, 0))
    gate.before_process_message(stub_broker, message)
    gate.heartbeat.stop()

    server_clock.advance_ms(150)  # the renewals never reached Redis
    other = gate.backend  # another process, on the same backend
    outcome = take(other, gate.redis_key("k"), "h:x", limit=1, lease_ms=100)
    assert (outcome.decision, outcome.reclaimed) == (ACQUIRED, 1)

    clock.now += 1
    gate.heartbeat.renew_due()
    gate.after_process_message(stub_broker, message)
    assert metric(gate, "dramatiq_gate_leases_lost", "record") == 1
    assert metric(gate, "dramatiq_gate_released", "record") == 1
    assert metric(gate, "dramatiq_gate_holders", "record") == 0


def test_coalescing_a_stampede_loses_no_work_and_reports_every_skipped_message(
    stub_broker: StubBroker,
    stub_worker: object,
    gate: PerKeyConcurrency,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="middleware.per_key_concurrency")
    state = coalescing_finisher(stub_broker, commits=2, items=200)
    assert_no_item_lost(state, gate, items=200)
    lines = [r.getMessage() for r in caplog.records if r.name.startswith("middleware.")]
    skipped = [line for line in lines if line.startswith("Skipping message")]
    assert len(skipped) == metric(gate, "dramatiq_gate_skipped_pending", "finisher") > 0
    assert all("is pending; it will do this message's work" in line for line in skipped)
