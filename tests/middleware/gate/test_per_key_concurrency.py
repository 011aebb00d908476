"""The gate middleware on a stub broker and both backends: decisions, options, failures."""

from __future__ import annotations

import threading
import time
from typing import Any

import dramatiq
import fakeredis
import pytest
import redis
from dramatiq.broker import MessageProxy
from dramatiq.brokers.stub import StubBroker
from dramatiq.middleware import SkipMessage

from middleware import GateBackend, PerKeyConcurrency, RedisBackend, StubBackend
from middleware.gate._options import (
    DEFERRALS,
    FIRST_DEFERRED_AT,
    DeferralFailedError,
    GateConfigurationError,
    GateOptions,
)
from tests.middleware.gate.conftest import worker_on
from tests.support.gate.leases import stored_keys
from tests.support.gate.scenarios import by_repo, declare, declare_batched, delivery, metric

pytestmark = pytest.mark.timeout(60)


def deferred_copies(broker: StubBroker, actor: dramatiq.Actor[Any, Any]) -> list[Any]:
    queue = broker.queues[dramatiq.common.dq_name(actor.queue_name)]
    return [dramatiq.Message.decode(data) for data in list(queue.queue)]


def holders(gate: PerKeyConcurrency, key: str) -> list[str]:
    return gate.backend.holders(gate.backend_key(key))


def test_an_over_limit_message_is_deferred_keeping_its_id_and_retry_budget(
    stub_broker: StubBroker, gate: PerKeyConcurrency
) -> None:
    actor = declare(stub_broker, concurrency_limit=1)
    running = delivery(actor, 7)
    stub_broker.emit_before("process_message", running)
    waiting = delivery(actor, 7, retries=3, max_retries=0)

    with pytest.raises(SkipMessage):
        stub_broker.emit_before("process_message", waiting)

    (copy,) = deferred_copies(stub_broker, actor)
    assert copy.message_id == waiting.message_id
    assert copy.options["retries"] == 3
    assert copy.options[DEFERRALS] == 1
    first = copy.options[FIRST_DEFERRED_AT]
    assert not waiting.failed

    again = MessageProxy(copy.copy(queue_name=actor.queue_name))
    with pytest.raises(SkipMessage):
        stub_broker.emit_before("process_message", again)
    second = deferred_copies(stub_broker, actor)[-1]
    assert (second.options[DEFERRALS], second.options[FIRST_DEFERRED_AT]) == (2, first)
    assert second.options["retries"] == 3
    assert metric(gate, "dramatiq_gate_deferred", "finish") == 2


def test_an_actor_with_no_retries_runs_every_message_once_however_often_deferred(
    stub_broker: StubBroker, stub_worker: dramatiq.Worker, gate: PerKeyConcurrency
) -> None:
    ran: list[int] = []
    lock = threading.Lock()

    @dramatiq.actor(broker=stub_broker, concurrency_key=by_repo, concurrency_limit=1, max_retries=0)
    def merge(repo: int, n: int) -> None:
        time.sleep(0.002)  # the work: long enough for the worker threads to overlap
        with lock:
            ran.append(n)

    for n in range(60):
        merge.send(n % 2, n)
    stub_broker.join(merge.queue_name, fail_fast=True)
    stub_worker.join()

    assert sorted(ran) == list(range(60))
    assert stub_broker.dead_letters == []
    assert metric(gate, "dramatiq_gate_deferred", "merge") > 0
    assert metric(gate, "dramatiq_gate_released", "merge") == 60


def test_options_are_looked_up_in_the_message_then_the_actor_then_the_constructor(
    stub_broker: StubBroker, gate: PerKeyConcurrency
) -> None:
    actor = declare(stub_broker, concurrency_limit=2, concurrency_lease_ms=4000)
    from_actor = GateOptions.of("test", actor.options, gate.defaults)
    assert (from_actor.limit, from_actor.lease_ms) == (2, 4000)
    assert from_actor.delay_ms == gate.defaults.delay_ms == 5
    from_message = GateOptions.of("test", {**actor.options, "concurrency_limit": 1}, gate.defaults)
    assert (from_message.limit, from_message.lease_ms) == (1, 4000)

    # And the middleware applies them: the message's own limit of 1 defers the second.
    stub_broker.emit_before("process_message", delivery(actor, 1, concurrency_limit=1))
    with pytest.raises(SkipMessage):
        stub_broker.emit_before("process_message", delivery(actor, 1, concurrency_limit=1))
    stub_broker.emit_before("process_message", delivery(actor, 1))
    assert len(holders(gate, "repo-1")) == 2


def test_unusable_gate_options_are_refused_when_the_actor_is_declared(
    stub_broker: StubBroker,
) -> None:
    with pytest.raises(GateConfigurationError, match="concurrency_limit"):
        declare(stub_broker, concurrency_limit=0, actor_name="zero")
    with pytest.raises(GateConfigurationError, match="concurrency_key"):
        dramatiq.actor(broker=stub_broker, concurrency_key="repo")(by_repo)
    with pytest.raises(GateConfigurationError, match="7 days"):
        declare(stub_broker, concurrency_delay_ms=8 * 24 * 3600 * 1000, actor_name="forever")
    with pytest.raises(GateConfigurationError, match="concurrency_skip_if_pending"):
        declare(stub_broker, concurrency_skip_if_pending="yes", actor_name="vague")
    with pytest.raises(ValueError, match="concurrency_limt"):
        declare(stub_broker, concurrency_limt=2, actor_name="typo")


def test_a_redis_error_defers_the_message_instead_of_running_it_ungated(
    stub_broker: StubBroker, gate: PerKeyConcurrency, monkeypatch: pytest.MonkeyPatch
) -> None:
    actor = declare(stub_broker, concurrency_limit=5)

    def unreachable(*args: Any, **kwargs: Any) -> Any:
        raise redis.ConnectionError("Connection refused")

    monkeypatch.setattr(gate.backend, "acquire", unreachable)
    message = delivery(actor, 1)

    # emit_before is the worker's own path: it would swallow a plain exception.
    with pytest.raises(SkipMessage):
        stub_broker.emit_before("process_message", message)

    (copy,) = deferred_copies(stub_broker, actor)
    assert copy.message_id == message.message_id
    assert metric(gate, "dramatiq_gate_redis_errors", "finish") == 1


class FlakyBroker(StubBroker):
    """A stub broker that fails to enqueue the first ``failures`` deferred copies."""

    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures
        self.events: list[str] = []

    def enqueue(self, message: Any, *, delay: int | None = None) -> Any:
        if DEFERRALS in message.options:
            if self.failures > 0:
                self.failures -= 1
                self.events.append("copy-refused")
                raise redis.ConnectionError("Connection reset by peer")
            self.events.append("copy-enqueued")
        return super().enqueue(message, delay=delay)


class AckRecorder(dramatiq.Middleware):
    def __init__(self, broker: FlakyBroker) -> None:
        self.broker = broker
        self.first_ack = threading.Event()

    def after_ack(self, broker: dramatiq.Broker, message: Any) -> None:
        self.broker.events.append(f"ack-{message.options.get(DEFERRALS, 0)}")
        self.first_ack.set()


def test_a_copy_that_cannot_be_enqueued_holds_back_the_originals_ack(
    backend: GateBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dramatiq.worker, "POST_PROCESS_MESSAGE_RETRY_DELAY_SECS", 0.01)
    broker = FlakyBroker(failures=3)
    gate = PerKeyConcurrency(
        backend=backend, key_prefix="t", concurrency_delay_ms=1, concurrency_jitter_ms=0
    )
    broker.add_middleware(gate)
    acks = AckRecorder(broker)
    broker.add_middleware(acks)
    ran = []

    @dramatiq.actor(broker=broker, concurrency_key=by_repo, concurrency_limit=1, max_retries=0)
    def finish(repo: int) -> None:
        ran.append(repo)

    foreign = backend  # another process holding the slot, on the same backend
    foreign.acquire(gate.backend_key("repo-1"), "h:other", limit=1, lease_ms=60_000, message_id="x")
    finish.send(1)
    with worker_on(broker, threads=1, timeout_ms=20) as worker:
        assert acks.first_ack.wait(timeout=20)
        assert broker.events[:5] == [
            "copy-refused",  # in before_process_message
            "copy-refused",  # in before_ack, ack held back
            "copy-refused",
            "copy-enqueued",
            "ack-0",  # the original is acked only once its copy is enqueued
        ]
        assert ran == []
        foreign.release(gate.backend_key("repo-1"), "h:other")
        broker.join(finish.queue_name, fail_fast=True)
        worker.join()
    assert ran == [1]
    assert broker.dead_letters == []


def test_a_skip_by_another_middleware_does_not_release_someone_elses_slot(
    stub_broker: StubBroker, gate: PerKeyConcurrency
) -> None:
    actor = declare(stub_broker, concurrency_limit=2)
    mine = delivery(actor, 1)
    gate.before_process_message(stub_broker, mine)
    assert len(holders(gate, "repo-1")) == 1

    # Another message, skipped by a middleware before the gate ever saw it, on
    # another thread, and a second delivery of the very same message (same id):
    # the gate gives nothing back for them.
    other = delivery(actor, 1)
    thread = threading.Thread(target=gate.after_skip_message, args=(stub_broker, other))
    thread.start()
    thread.join()
    twin = MessageProxy(mine._message)
    gate.after_skip_message(stub_broker, twin)
    gate.after_process_message(stub_broker, twin)
    assert len(holders(gate, "repo-1")) == 1

    gate.after_process_message(stub_broker, mine)
    assert holders(gate, "repo-1") == []
    gate.after_process_message(stub_broker, mine)  # twice: still nothing else released
    assert metric(gate, "dramatiq_gate_released", "finish") == 1


def test_a_message_skipped_after_the_gate_gives_its_own_slot_back(
    stub_broker: StubBroker, gate: PerKeyConcurrency
) -> None:
    class SkipAll(dramatiq.Middleware):
        def before_process_message(self, broker: dramatiq.Broker, message: Any) -> None:
            raise SkipMessage("refused by a later middleware")

    stub_broker.add_middleware(SkipAll())
    actor = declare(stub_broker, concurrency_limit=1)
    message = delivery(actor, 3)
    with pytest.raises(SkipMessage):
        stub_broker.emit_before("process_message", message)
    assert len(holders(gate, "repo-3")) == 1
    stub_broker.emit_after("skip_message", message)
    assert holders(gate, "repo-3") == []


@pytest.mark.parametrize(
    ("key_function", "reason"),
    [
        (lambda repo: [][repo], "IndexError"),
        (lambda repo: repo, "non-empty str or None, got 1"),
        (lambda repo: "", "non-empty str"),
        (lambda repo, missing: "k", "TypeError"),
    ],
)
def test_a_key_function_that_fails_dead_letters_the_message_with_its_reason(
    stub_broker: StubBroker, key_function: Any, reason: str, caplog: pytest.LogCaptureFixture
) -> None:
    @dramatiq.actor(broker=stub_broker, concurrency_key=key_function)
    def keyed(repo: int) -> None:
        pass

    message = delivery(keyed, 1)
    with pytest.raises(SkipMessage, match=reason):
        stub_broker.emit_before("process_message", message)
    assert message.failed
    assert reason in caplog.text


def test_a_key_of_none_runs_the_message_without_a_gate(
    stub_broker: StubBroker, gate: PerKeyConcurrency
) -> None:
    @dramatiq.actor(broker=stub_broker, concurrency_key=lambda repo: None)
    def free(repo: int) -> None:
        pass

    for _ in range(3):
        stub_broker.emit_before("process_message", delivery(free, 1))
    assert stored_keys(gate.backend) == []
    assert metric(gate, "dramatiq_gate_acquired", "free") == 0


def test_a_message_option_can_name_its_key(
    stub_broker: StubBroker, gate: PerKeyConcurrency
) -> None:
    actor = declare(stub_broker, concurrency_limit=1)
    stub_broker.emit_before("process_message", delivery(actor, 1, concurrency_key="chosen"))
    assert len(holders(gate, "chosen")) == 1
    assert gate.backend_key("chosen") == "test:gate:{chosen}"


def test_the_key_function_is_called_like_the_actor(
    stub_broker: StubBroker, gate: PerKeyConcurrency
) -> None:
    @dramatiq.actor(
        broker=stub_broker, concurrency_key=lambda repoid, commitid: f"{repoid}:{commitid}"
    )
    def finish_commit(repoid: int, commitid: int) -> None:
        pass

    positional = MessageProxy(finish_commit.message(1, 2))
    by_name = MessageProxy(finish_commit.message_with_options(kwargs={"repoid": 3, "commitid": 4}))
    mixed = MessageProxy(finish_commit.message_with_options(args=(5,), kwargs={"commitid": 6}))
    for message in (positional, by_name, mixed):
        gate.before_process_message(stub_broker, message)
    for key in ("1:2", "3:4", "5:6"):
        assert len(holders(gate, key)) == 1


def test_the_constructor_takes_the_actor_options_names_and_refuses_unusable_ones(
    backend: GateBackend,
) -> None:
    gate = PerKeyConcurrency(
        backend=backend,
        concurrency_limit=3,
        concurrency_delay_ms=7,
        concurrency_jitter_ms=0,
        concurrency_lease_ms=900,
        concurrency_skip_if_pending=True,
    )
    assert gate.defaults == GateOptions(3, 7, 0, 900, True)
    with pytest.raises(GateConfigurationError, match="concurrency_limit"):
        PerKeyConcurrency(backend=backend, concurrency_limit=0)


def test_metrics_are_off_unless_asked_for(backend: GateBackend) -> None:
    broker = StubBroker()
    quiet = PerKeyConcurrency(backend=backend, key_prefix="quiet")
    broker.add_middleware(quiet)
    actor = declare(broker, concurrency_limit=1)
    broker.emit_before("process_message", delivery(actor, 1))
    with pytest.raises(SkipMessage):
        broker.emit_before("process_message", delivery(actor, 1))
    assert len(broker.queues["default.DQ"].queue) == 1, "deferred all the same"
    assert quiet.metrics.registry is None, "no metric was created"
    broker.close()


class FailingThenBrokenBroker(StubBroker):
    """Refuses the first deferred copy with a connection error, every later one for good."""

    def __init__(self) -> None:
        super().__init__()
        self.attempts = 0

    def enqueue(self, message: Any, *, delay: int | None = None) -> Any:
        if DEFERRALS in message.options:
            self.attempts += 1
            if self.attempts == 1:
                raise redis.ConnectionError("Connection reset by peer")
            raise ValueError("delay is past this broker's maximum")
        return super().enqueue(message, delay=delay)


def test_a_held_back_ack_is_given_up_when_the_copy_turns_out_never_to_fit(
    backend: GateBackend,
) -> None:
    broker = FailingThenBrokenBroker()
    gate = PerKeyConcurrency(backend=backend, key_prefix="t", concurrency_jitter_ms=0)
    broker.add_middleware(gate)
    actor = declare(broker, concurrency_limit=1)
    broker.emit_before("process_message", delivery(actor, 1))  # takes the only slot
    waiting = delivery(actor, 1)
    with pytest.raises(SkipMessage):
        broker.emit_before("process_message", waiting)
    assert not waiting.failed, "a connection error may pass: the ack is held back"

    # The worker's ack retry: a connection error loops; anything else fails the
    # message, and the worker's next turn of its loop dead-letters it (nack).
    with pytest.raises(DeferralFailedError) as refused:
        gate.before_ack(broker, waiting)
    assert isinstance(refused.value, dramatiq.errors.BrokerConnectionError), "one more turn"
    assert waiting.failed, "so that turn nacks: dead-lettered, with the reason"
    assert "can never be enqueued" in str(waiting._exception)
    gate.before_ack(broker, waiting)  # given up: no longer held
    assert broker.attempts == 2
    broker.close()


def test_a_copy_goes_back_to_the_queue_its_message_was_routed_to_not_the_actors(
    stub_broker: StubBroker, gate: PerKeyConcurrency
) -> None:
    # As covworker sends a commit's last finisher ahead: the actor's queue is
    # "default", the message is routed to "default.finish".
    stub_broker.declare_queue("default.finish")
    over = declare(stub_broker, concurrency_limit=1)

    batched = declare_batched(stub_broker)

    stub_broker.emit_before("process_message", delivery(over, 7))
    routed = MessageProxy(over.message(7).copy(queue_name="default.finish"))
    with pytest.raises(SkipMessage):
        stub_broker.emit_before("process_message", routed)
    window = MessageProxy(batched.message("a").copy(queue_name="default.finish"))
    with pytest.raises(SkipMessage, match="debounced"):
        gate.before_process_message(stub_broker, window)

    copies = [dramatiq.Message.decode(d) for d in stub_broker.queues["default.finish.DQ"].queue]
    assert {c.message_id for c in copies} == {routed.message_id, window.message_id}
    assert all(c.queue_name == "default.finish.DQ" for c in copies)
    assert list(stub_broker.queues["default.DQ"].queue) == []


def test_the_gate_takes_a_backend_or_a_client(fake_redis: fakeredis.FakeRedis) -> None:
    assert isinstance(PerKeyConcurrency(client=fake_redis).backend, RedisBackend)
    assert isinstance(PerKeyConcurrency(backend=StubBackend()).backend, StubBackend)
    with pytest.raises(ValueError, match="a backend or a client"):
        PerKeyConcurrency()


def test_of_finds_the_gate_added_to_a_broker_and_none_on_a_broker_without(
    gate: PerKeyConcurrency,
) -> None:
    with_gate, without = StubBroker(), StubBroker()
    with_gate.add_middleware(gate)
    assert PerKeyConcurrency.of(with_gate) is gate
    assert PerKeyConcurrency.of(without) is None
    with_gate.close()
    without.close()
