"""A lease lost under the gate, and coalescing, on both backends and a stub broker.

The heartbeat itself is tested in ``test_leases.py``.
"""

from __future__ import annotations

import logging

import pytest
from dramatiq.broker import MessageProxy
from dramatiq.brokers.stub import StubBroker

from middleware import PerKeyConcurrency
from tests.middleware.gate.conftest import FakeServerClock
from tests.support.gate.leases import ACQUIRED, Monotonic, take
from tests.support.gate.scenarios import (
    assert_no_item_lost,
    coalescing_finisher,
    declare_recorder,
    metric,
)

pytestmark = pytest.mark.timeout(60)

KEY = "test:gate:{k}"


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
    outcome = take(other, gate.backend_key("k"), "h:x", limit=1, lease_ms=100)
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
    caplog.set_level(logging.DEBUG, logger="middleware.gate.per_key_concurrency")
    state = coalescing_finisher(stub_broker, commits=2, items=200)
    assert_no_item_lost(state, gate, items=200)
    lines = [r.getMessage() for r in caplog.records if r.name.startswith("middleware.")]
    skipped = [line for line in lines if line.startswith("Skipping message")]
    assert len(skipped) == metric(gate, "dramatiq_gate_skipped_pending", "finisher") > 0
    assert all("is pending; it will do this message's work" in line for line in skipped)
