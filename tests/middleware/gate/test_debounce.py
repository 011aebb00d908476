"""``concurrency_debounce_ms``: a key's arrivals batch into one run, and none is lost.

On both backends and a stub broker (the worker processes, real Redis and a
worker killed inside the window: ``tests/e2e/test_finisher_debounce.py``).
"""

from __future__ import annotations

import time

import dramatiq
import pytest
from dramatiq.broker import MessageProxy
from dramatiq.brokers.stub import StubBroker
from dramatiq.middleware import SkipMessage

from middleware import GateBackend, PerKeyConcurrency
from middleware.gate._options import DEBOUNCED, GateConfigurationError
from tests.middleware.gate.conftest import gate_with
from tests.support.gate.scenarios import coalescing_finisher, declare_batched, metric

pytestmark = pytest.mark.timeout(60)

KEY = "test:gate:{k}"


def test_a_stampede_in_a_window_runs_once_per_window_and_loses_nothing(
    stub_broker: StubBroker, stub_worker: object, gate: PerKeyConcurrency
) -> None:
    state = coalescing_finisher(stub_broker, commits=2, items=200, debounce_ms=300)
    assert sorted(state.merged) == sorted((item % 2, item) for item in range(200))
    assert all(not pending for pending in state.recorded.values())
    opened = metric(gate, "dramatiq_gate_debounced", "finisher")
    assert opened >= 2, "each commit opened a window"
    # One run per window (and a window per run at most: arrivals after a run
    # started open a new one), far fewer than the 200 messages.
    assert state.runs == opened < 20
    assert metric(gate, "dramatiq_gate_skipped_pending", "finisher") > 0


def test_only_the_message_that_opens_the_window_gets_a_copy_and_the_copy_then_runs(
    backend: GateBackend,
) -> None:
    leases = backend

    def acquire(token: str, message_id: str, debounce_ms: int) -> tuple[int, int, int, str]:
        return leases.acquire(
            KEY,
            token,
            limit=1,
            lease_ms=1000,
            message_id=message_id,
            skip_if_pending=True,
            debounce_ms=debounce_ms,
        )

    assert acquire("h:1", "m1", 500)[0] == 4, "the first message opens the window"
    assert acquire("h:2", "m2", 500)[0:4:3] == (3, "m1"), "covered by m1's copy"
    assert acquire("h:1b", "m1", 500)[0] == 4, "a redelivered m1 finds its own marker"
    assert acquire("h:c", "m1", 0)[0] == 1, "the copy (not debounced again) runs"
    assert leases.markers(KEY) == []
    assert acquire("h:3", "m3", 500)[0] == 4, "after the copy started, a new window opens"


def test_a_debounce_without_skip_if_pending_is_refused_at_declaration(
    backend: GateBackend,
) -> None:
    broker = StubBroker()
    broker.add_middleware(PerKeyConcurrency(backend=backend))
    with pytest.raises(GateConfigurationError, match="concurrency_skip_if_pending"):

        @dramatiq.actor(broker=broker, concurrency_key=lambda k: k, concurrency_debounce_ms=100)
        def not_fungible(k: str) -> None: ...

    broker.close()


def test_the_copy_that_closes_a_window_is_marked_and_keeps_its_retry_budget(
    stub_broker: StubBroker, gate: PerKeyConcurrency
) -> None:
    batched = declare_batched(stub_broker)

    message = batched.message("a")
    with pytest.raises(SkipMessage, match="debounced"):
        gate.before_process_message(stub_broker, MessageProxy(message))
    delayed = list(stub_broker.queues["default.DQ"].queue)
    assert len(delayed) == 1
    copy = dramatiq.Message.decode(delayed[0])
    assert copy.message_id == message.message_id
    assert copy.options[DEBOUNCED] is True
    assert copy.options["eta"] >= message.message_timestamp + 60_000, "due when the window closes"
    assert "concurrency_deferrals" not in copy.options
    assert "retries" not in copy.options


def test_another_actors_pending_copy_on_the_same_key_never_covers_a_debounced_message(
    stub_broker: StubBroker, gate: PerKeyConcurrency
) -> None:
    # covworker's finisher and notify share their commit's key: a notify's
    # deferred copy does no merge, so a finisher must never be acked under it.
    options = {"concurrency_key": lambda k: k, "concurrency_skip_if_pending": True}

    @dramatiq.actor(broker=stub_broker, concurrency_debounce_ms=60_000, **options)
    def finish(k: str) -> None: ...

    @dramatiq.actor(broker=stub_broker, concurrency_limit=1, **options)
    def notify(k: str) -> None: ...

    running = MessageProxy(notify.message("c"))
    gate.before_process_message(stub_broker, running)  # holds the key's one slot
    with pytest.raises(SkipMessage, match="over the per-key concurrency limit"):
        gate.before_process_message(stub_broker, MessageProxy(notify.message("c")))

    arrival = finish.message("c")
    with pytest.raises(SkipMessage, match="debounced"):
        gate.before_process_message(stub_broker, MessageProxy(arrival))
    copies = [dramatiq.Message.decode(m) for m in stub_broker.queues["default.DQ"].queue]
    assert [c.message_id for c in copies if c.actor_name == "finish"] == [arrival.message_id]

    # Within each actor, coalescing is unchanged: a second finisher is covered.
    with pytest.raises(SkipMessage, match="pending deferred copy"):
        gate.before_process_message(stub_broker, MessageProxy(finish.message("c")))
    gate.after_process_message(stub_broker, running)


def test_a_window_open_on_one_queue_does_not_cover_a_message_sent_to_another(
    stub_broker: StubBroker, gate: PerKeyConcurrency
) -> None:
    # covworker's finishers: one waiting on the shared queue must not hold back
    # the one a commit's last upload sends ahead, on the finisher queue.
    stub_broker.declare_queue("default.finish")

    batched = declare_batched(stub_broker)

    def decide(queue: str) -> str:
        proxy = MessageProxy(batched.message("a").copy(queue_name=queue))
        with pytest.raises(SkipMessage) as skipped:
            gate.before_process_message(stub_broker, proxy)
        return str(skipped.value)

    assert "debounced" in decide("default")  # opens the shared queue's window
    assert "pending" in decide("default")  # covered by it
    assert "debounced" in decide("default.finish")  # not covered: a window of its own
    assert "pending" in decide("default.finish")
    assert len(stub_broker.queues["default.DQ"].queue) == 1
    assert len(stub_broker.queues["default.finish.DQ"].queue) == 1


def test_a_message_sent_through_the_gate_opens_its_window_at_enqueue_and_runs_once_delivered(
    stub_broker: StubBroker, gate: PerKeyConcurrency
) -> None:
    batched = declare_batched(stub_broker)

    sent = gate.enqueue(stub_broker, batched.message("a"))
    assert sent is not None
    assert list(stub_broker.queues["default"].queue) == [], "nothing to deliver before the window"
    (copy,) = [dramatiq.Message.decode(m) for m in stub_broker.queues["default.DQ"].queue]
    assert copy.message_id == sent.message_id and copy.options[DEBOUNCED] is True
    assert copy.options["eta"] >= sent.message_timestamp, "due when the window closes"
    # AgeLimit counts from then: the timestamp is the window's end (60 s on),
    # not the send, give or take the milliseconds between the two clock reads.
    assert copy.message_timestamp >= copy.options["eta"] - 1_000, "AgeLimit counts from then"
    assert metric(gate, "dramatiq_gate_debounced", "batched") == 1
    marker_expiry = gate.backend.markers(gate.backend_key("a"))
    assert len(marker_expiry) == 1, "its marker stands for the window"

    for _ in range(3):
        assert gate.enqueue(stub_broker, batched.message("a")) is None, "covered by the window"
    assert metric(gate, "dramatiq_gate_coalesced_at_enqueue", "batched") == 3

    # Delivered when the window closes: it runs at once, without a second window.
    running = MessageProxy(copy)
    gate.before_process_message(stub_broker, running)
    assert gate.backend.markers(gate.backend_key("a")) == [], "started: it covers no one now"
    assert len(gate.backend.holders(gate.backend_key("a"))) == 1
    gate.after_process_message(stub_broker, running)
    assert len(stub_broker.queues["default.DQ"].queue) == 1, "no copy of the copy"


def test_a_window_opened_at_enqueue_outlives_a_pending_ttl_shorter_than_it(
    backend: GateBackend,
) -> None:
    broker = StubBroker()
    with gate_with(backend=backend, key_prefix="test:gate", pending_ttl_ms=10) as gate:
        broker.add_middleware(gate)
        batched = declare_batched(broker)  # a 60 s window
        assert gate.enqueue(broker, batched.message("a")) is not None
        time.sleep(0.05)  # past the 10 ms pending TTL, well inside the window
        assert gate.enqueue(broker, batched.message("a")) is None, "still covered"
    broker.close()
