"""Coalescing at enqueue: ``gate.enqueue`` drops a message a pending one covers.

On the stub broker and both backends; the stampede on real Redis is in
``test_gate_on_redis.py``.
"""

from __future__ import annotations

from typing import Any

import dramatiq
import pytest
from dramatiq.broker import MessageProxy
from dramatiq.brokers.stub import StubBroker
from dramatiq.middleware import SkipMessage

from middleware import PerKeyConcurrency
from middleware.gate._options import MARKED_AT_ENQUEUE
from tests.support.gate.scenarios import (
    assert_no_item_lost,
    coalescing_finisher,
    declare,
    metric,
)

pytestmark = pytest.mark.timeout(60)


def declare_fungible(broker: dramatiq.Broker, **options: Any) -> dramatiq.Actor[Any, Any]:
    @dramatiq.actor(
        broker=broker,
        concurrency_key=lambda k: k,
        concurrency_skip_if_pending=True,
        max_retries=0,
        **options,
    )
    def fungible(k: str) -> None: ...

    return fungible


@pytest.fixture
def fungible(stub_broker: StubBroker) -> dramatiq.Actor[Any, Any]:
    return declare_fungible(stub_broker)


def enqueued_first(
    gate: PerKeyConcurrency, broker: dramatiq.Broker, actor: dramatiq.Actor[Any, Any]
) -> dramatiq.Message[Any]:
    """The first message of key "a", enqueued through the gate: none covers it yet."""
    first = gate.enqueue(broker, actor.message("a"))
    assert first is not None
    return first


def queued(broker: StubBroker, queue: str = "default") -> list[dramatiq.Message[Any]]:
    return [dramatiq.Message.decode(data) for data in list(broker.queues[queue].queue)]


def test_a_message_covered_by_a_pending_one_is_not_enqueued_and_the_sender_is_told(
    stub_broker: StubBroker, gate: PerKeyConcurrency, fungible: dramatiq.Actor[Any, Any]
) -> None:
    first = enqueued_first(gate, stub_broker, fungible)
    assert first.options[MARKED_AT_ENQUEUE] is True
    for _ in range(5):
        assert gate.enqueue(stub_broker, fungible.message("a")) is None, "covered: dropped"
    other_key = gate.enqueue(stub_broker, fungible.message("b"))
    assert other_key is not None, "another key is not covered"
    assert [m.message_id for m in queued(stub_broker)] == [first.message_id, other_key.message_id]
    assert metric(gate, "dramatiq_gate_coalesced_at_enqueue", "fungible") == 5


def test_once_the_pending_message_starts_the_next_one_is_enqueued_again(
    stub_broker: StubBroker, gate: PerKeyConcurrency, fungible: dramatiq.Actor[Any, Any]
) -> None:
    first = enqueued_first(gate, stub_broker, fungible)
    running = MessageProxy(first)
    gate.before_process_message(stub_broker, running)  # starts: its marker goes
    assert gate.backend.markers(gate.backend_key("a")) == []
    later = gate.enqueue(stub_broker, fungible.message("a"))
    assert later is not None, "its work was not covered by a run that had already started"
    gate.after_process_message(stub_broker, running)


def test_a_deferred_marked_message_keeps_covering_until_its_copy_starts(
    stub_broker: StubBroker, gate: PerKeyConcurrency
) -> None:
    fungible = declare_fungible(stub_broker, concurrency_limit=1)
    holder = MessageProxy(fungible.message("a"))
    gate.before_process_message(stub_broker, holder)  # the only slot
    first = enqueued_first(gate, stub_broker, fungible)
    with pytest.raises(SkipMessage, match="deferred"):
        gate.before_process_message(stub_broker, MessageProxy(first))
    assert gate.enqueue(stub_broker, fungible.message("a")) is None, "its copy covers it"
    gate.after_process_message(stub_broker, holder)


def test_messages_the_gate_may_not_drop_are_always_enqueued(
    stub_broker: StubBroker, gate: PerKeyConcurrency, fungible: dramatiq.Actor[Any, Any]
) -> None:
    plain = declare(stub_broker, concurrency_limit=1)  # not fungible

    @dramatiq.actor(broker=stub_broker)
    def ungated(k: str) -> None: ...

    assert gate.enqueue(stub_broker, fungible.message("a")) is not None  # marks "a"
    kept = [
        gate.enqueue(stub_broker, fungible.message("a"), delay=100),  # sent for later
        gate.enqueue(stub_broker, fungible.message_with_options(args=("a",), on_success="x")),
        gate.enqueue(stub_broker, fungible.message_with_options(args=("a",), store_results=True)),
        gate.enqueue(stub_broker, plain.message(1)),
        gate.enqueue(stub_broker, plain.message(1)),
        gate.enqueue(stub_broker, ungated.message("a")),
        gate.enqueue(stub_broker, ungated.message("a")),
    ]
    assert all(message is not None for message in kept)
    assert metric(gate, "dramatiq_gate_coalesced_at_enqueue", "fungible") == 0


def test_a_marker_covers_only_its_own_queue(
    stub_broker: StubBroker, gate: PerKeyConcurrency, fungible: dramatiq.Actor[Any, Any]
) -> None:
    stub_broker.declare_queue("default.finish")
    assert gate.enqueue(stub_broker, fungible.message("a")) is not None
    ahead = fungible.message("a").copy(queue_name="default.finish")
    assert gate.enqueue(stub_broker, ahead) is not None, "sent ahead: not held back"
    again = fungible.message("a").copy(queue_name="default.finish")
    assert gate.enqueue(stub_broker, again) is None


class RefusingBroker(StubBroker):
    def enqueue(self, message: Any, *, delay: int | None = None) -> Any:
        raise ConnectionError("broker down")


def test_a_message_that_cannot_be_enqueued_leaves_no_marker_and_the_sender_sees_the_error(
    gate: PerKeyConcurrency,
) -> None:
    broker = RefusingBroker()
    broker.add_middleware(gate)
    fungible = declare_fungible(broker)
    with pytest.raises(ConnectionError, match="broker down"):
        gate.enqueue(broker, fungible.message("a"))
    assert gate.backend.markers(gate.backend_key("a")) == []
    broker.close()


def test_a_marked_message_skipped_before_the_gate_takes_its_marker_away(
    stub_broker: StubBroker, gate: PerKeyConcurrency, fungible: dramatiq.Actor[Any, Any]
) -> None:
    first = enqueued_first(gate, stub_broker, fungible)
    # AgeLimit (or argument validation) skipped it before the gate saw it.
    stub_broker.emit_after("skip_message", MessageProxy(first))
    assert gate.backend.markers(gate.backend_key("a")) == []
    assert gate.enqueue(stub_broker, fungible.message("a")) is not None


def test_a_backend_error_at_enqueue_sends_the_message_as_is(
    stub_broker: StubBroker,
    gate: PerKeyConcurrency,
    fungible: dramatiq.Actor[Any, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def unreachable(*args: Any, **kwargs: Any) -> Any:
        raise ConnectionError("Connection refused")

    monkeypatch.setattr(gate.backend, "mark_unless_pending", unreachable)
    assert gate.enqueue(stub_broker, fungible.message("a")) is not None
    assert gate.enqueue(stub_broker, fungible.message("a")) is not None


def test_a_stampede_sent_through_the_gate_delivers_a_handful_and_loses_nothing(
    stub_broker: StubBroker, stub_worker: object, gate: PerKeyConcurrency
) -> None:
    state = coalescing_finisher(stub_broker, commits=2, items=200, send_through=gate)
    assert_no_item_lost(state, gate, items=200, skipped_at="enqueue")
    delivered = metric(gate, "dramatiq_gate_acquired", "finisher") + metric(
        gate, "dramatiq_gate_deferred", "finisher"
    )
    assert delivered < 200 / 4, "most sends were dropped before the broker"
