"""Anomalies: what the gate does and logs (routine deferrals log only at debug)."""

from __future__ import annotations

import logging
import time
from typing import Any

import dramatiq
import pytest
from dramatiq.broker import MessageProxy
from dramatiq.brokers.stub import StubBroker
from dramatiq.middleware import SkipMessage

from middleware import GateBackend, PerKeyConcurrency
from middleware.gate import _deferrals
from middleware.gate._options import DEFERRALS, FIRST_DEFERRED_AT
from tests.support.gate.scenarios import by_repo, declare, delivery, metric

pytestmark = pytest.mark.timeout(60)


def test_a_message_deferred_for_long_is_warned_about_once_per_period(
    stub_broker: StubBroker, backend: GateBackend, caplog: pytest.LogCaptureFixture
) -> None:
    gate = PerKeyConcurrency(
        backend=backend, key_prefix="old", concurrency_delay_ms=1, warn_deferred_after_ms=60_000
    )
    stub_broker.add_middleware(gate)
    actor = declare(stub_broker, concurrency_limit=1, actor_name="slowpoke")
    stub_broker.emit_before("process_message", delivery(actor, 1, concurrency_key="k"))
    long_ago = int(time.time() * 1000) - 120_000
    waiting: dict[str, Any] = {DEFERRALS: 40, FIRST_DEFERRED_AT: long_ago, "concurrency_key": "k"}
    message = actor.message_with_options(args=(1,), **waiting)
    for _ in range(3):  # three deliveries of one message, each deferred again
        with pytest.raises(SkipMessage):
            gate.before_process_message(stub_broker, MessageProxy(message))
    warnings = [r for r in caplog.records if "has been deferred for" in r.getMessage()]
    assert len(warnings) == 1
    assert "on key 'k'" in warnings[0].getMessage()
    assert "(41 deferrals)" in warnings[0].getMessage()


def test_routine_deferrals_log_nothing_of_the_gates_own_above_debug(
    stub_broker: StubBroker,
    stub_worker: dramatiq.Worker,
    gate: PerKeyConcurrency,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="middleware")

    @dramatiq.actor(broker=stub_broker, concurrency_key=by_repo, concurrency_limit=1, max_retries=0)
    def finish(repo: int, n: int = 0) -> None:
        # The first run holds the slot until another delivery was deferred,
        # so the test does not depend on two threads meeting by chance.
        if n == 0:
            deadline = time.monotonic() + 20
            while metric(gate, "dramatiq_gate_deferred", "finish") == 0:
                assert time.monotonic() < deadline, "no delivery was ever deferred"
                time.sleep(0.01)

    for n in range(20):
        finish.send(1, n)
    actor = finish
    stub_broker.join(actor.queue_name, fail_fast=True)
    stub_worker.join()
    deferred = metric(gate, "dramatiq_gate_deferred", "finish")
    assert deferred > 0
    own = [r for r in caplog.records if r.name.startswith("middleware.")]
    assert len([r for r in own if "Deferring message" in r.getMessage()]) == deferred
    assert not [r for r in own if r.levelno > logging.DEBUG]
    # Dramatiq's own "was skipped" warning stays: the gate does not filter its logs.


def test_the_gate_warns_at_boot_when_it_sits_before_prometheus(
    stub_broker: StubBroker, gate: PerKeyConcurrency, caplog: pytest.LogCaptureFixture
) -> None:
    from dramatiq.middleware.prometheus import Prometheus

    stub_broker.add_middleware(Prometheus())
    gate.before_worker_boot(stub_broker, None)
    gate.after_worker_shutdown(stub_broker, None)
    assert "sits before Prometheus" in caplog.text


def test_an_unexpected_error_after_acquiring_defers_and_gives_the_slot_back(
    stub_broker: StubBroker,
    gate: PerKeyConcurrency,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(holding: object) -> None:
        raise RuntimeError("a bug in the gate")

    monkeypatch.setattr(gate.heartbeat, "add", broken)
    actor = declare(stub_broker, concurrency_limit=1)
    message = delivery(actor, 1)
    with pytest.raises(SkipMessage):  # not swallowed: the actor does not run ungated
        stub_broker.emit_before("process_message", message)
    assert gate.backend.holders(gate.backend_key("repo-1")) == []
    assert metric(gate, "dramatiq_gate_deferred", "finish") == 1


def test_a_deferral_that_cannot_be_made_dead_letters_instead_of_running_ungated(
    stub_broker: StubBroker, gate: PerKeyConcurrency, monkeypatch: pytest.MonkeyPatch
) -> None:
    actor = declare(stub_broker, concurrency_limit=1)
    stub_broker.emit_before("process_message", delivery(actor, 1))  # takes the only slot
    waiting = delivery(actor, 1)

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug while making the copy")

    monkeypatch.setattr(_deferrals, "current_millis", broken)
    with pytest.raises(SkipMessage, match="no deferred copy"):  # not swallowed, not run
        stub_broker.emit_before("process_message", waiting)
    assert waiting.failed
