"""Deferred copies, made and enqueued by ``Deferrals`` directly on a stub broker:
what a copy carries, the ack held back while the broker cannot take it, and the
copy given up when it never can. The gate calling them is tested in
``test_per_key_concurrency.py`` and the other test files beside it."""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

import dramatiq
import pytest
import redis
from dramatiq import Message
from dramatiq.broker import MessageProxy
from dramatiq.brokers.stub import StubBroker
from dramatiq.errors import BrokerConnectionError
from dramatiq.results import ResultFailure, Results
from dramatiq.results.backends import StubBackend as ResultsStubBackend
from prometheus_client import CollectorRegistry

from middleware import StubBackend
from middleware.gate._deferrals import Deferrals, is_transient
from middleware.gate._metrics import GateMetrics, Reporting
from middleware.gate._options import (
    DEBOUNCED,
    DEFERRALS,
    FIRST_DEFERRED_AT,
    DeferralFailedError,
    DeferralNotEnqueuedError,
    GateOptions,
)
from middleware.gate.backends.base import marker
from tests.middleware.gate.conftest import gate_with, worker_on

pytestmark = pytest.mark.timeout(30)

OPTIONS = GateOptions(
    limit=1, delay_ms=100, jitter_ms=0, lease_ms=1000, skip_if_pending=True, debounce_ms=700
)


@pytest.mark.parametrize(
    "exc",
    [
        BrokerConnectionError("down"),
        redis.ConnectionError("refused"),
        redis.exceptions.ReadOnlyError("READONLY You can't write against a read only replica."),
        redis.ResponseError("OOM command not allowed when used memory > 'maxmemory'."),
        redis.ResponseError("Error running script (call to f_1): @user_script:12: -READONLY x"),
        redis.ResponseError("MASTERDOWN Link with MASTER is down"),
        ConnectionResetError(),
        TimeoutError(),
    ],
)
def test_errors_a_broker_or_redis_may_get_over_are_transient(exc: BaseException) -> None:
    assert is_transient(exc) is True


@pytest.mark.parametrize(
    "exc",
    [
        redis.ResponseError("ERR wrong number of arguments for 'zadd' command"),
        redis.ResponseError("ERR unknown command 'BUSYWAIT'"),  # a word that starts like BUSY
        ValueError("message too large"),
        TypeError("not serialisable"),
    ],
)
def test_any_other_error_is_not_transient(exc: BaseException) -> None:
    assert is_transient(exc) is False


@pytest.fixture
def broker() -> Iterator[StubBroker]:
    broker = StubBroker()
    broker.emit_after("process_boot")

    @dramatiq.actor(broker=broker, queue_name="q")
    def job(n: int) -> None:  # only its declaration matters
        pass

    yield broker
    broker.close()


@pytest.fixture
def backend() -> StubBackend:
    return StubBackend()


def deferrals(backend: StubBackend, *, warn_after_ms: int = 300_000) -> Deferrals:
    return Deferrals(
        logger=logging.getLogger("test.gate"),
        metrics=GateMetrics(enabled=True, registry=CollectorRegistry()),
        reporting=Reporting(),
        backend=backend,
        backend_key=lambda key: f"test:gate:{{{key}}}",
        pending_ttl_ms=60_000,
        warn_deferred_after_ms=warn_after_ms,
    )


def delivered(**options: Any) -> MessageProxy:
    return MessageProxy(
        Message(queue_name="q", actor_name="job", args=(1,), kwargs={}, options=options)
    )


def queued(broker: StubBroker) -> list[Message[Any]]:
    queue = broker.queues["q.DQ"]
    return [Message.decode(queue.get_nowait()) for _ in range(queue.qsize())]


def test_a_deferred_copy_keeps_the_id_and_counts_its_deferrals_from_the_first(
    broker: StubBroker, backend: StubBackend
) -> None:
    original = delivered(retries=2)
    deferrals(backend).defer(broker, original, "k", OPTIONS, holders=1)
    (copy,) = queued(broker)
    assert copy.message_id == original.message_id
    assert copy.options["retries"] == 2, "a deferral is not a retry"
    assert copy.options[DEFERRALS] == 1
    first = copy.options[FIRST_DEFERRED_AT]
    assert copy.message_timestamp == first + OPTIONS.delay_ms, "due when its delay is over"
    assert original.options["store_results"] is False, "the original is not a completion"

    deferrals(backend).defer(broker, MessageProxy(copy), "k", OPTIONS, holders=1)
    (again,) = queued(broker)
    assert (again.options[DEFERRALS], again.options[FIRST_DEFERRED_AT]) == (2, first)


@pytest.mark.parametrize("debounce", [False, True])
def test_with_keep_timestamp_a_copy_keeps_its_messages_timestamp_for_age_limit(
    broker: StubBroker, backend: StubBackend, debounce: bool
) -> None:
    sent = Message(queue_name="q", actor_name="job", args=(1,), kwargs={}, options={})
    original = MessageProxy(sent.copy(message_timestamp=sent.message_timestamp - 5_000))
    kept = dataclasses.replace(OPTIONS, keep_timestamp=True)
    deferrals(backend).defer(broker, original, "k", kept, holders=1, debounce=debounce)
    (copy,) = queued(broker)
    assert copy.message_timestamp == original.message_timestamp
    assert copy.options["eta"] > copy.message_timestamp + 5_000, "still delayed as usual"


def test_the_copy_that_closes_a_debounce_window_is_due_then_and_is_not_a_deferral(
    broker: StubBroker, backend: StubBackend
) -> None:
    original = delivered()
    deferrals(backend).defer(broker, original, "k", OPTIONS, holders=0, debounce=True)
    (copy,) = queued(broker)
    assert copy.options[DEBOUNCED] is True
    assert DEFERRALS not in copy.options and FIRST_DEFERRED_AT not in copy.options
    assert copy.options["eta"] - copy.message_timestamp == pytest.approx(0, abs=50)
    assert copy.message_timestamp - original.message_timestamp >= OPTIONS.debounce_ms


class Flaky:
    """Stands in for ``broker.enqueue``: raises ``errors`` in turn, then enqueues."""

    def __init__(self, broker: StubBroker, *errors: Exception) -> None:
        self.broker, self.errors, self.enqueue_ = broker, list(errors), broker.enqueue

    def __call__(self, message: Message[Any], *, delay: int | None = None) -> Message[Any]:
        if self.errors:
            raise self.errors.pop(0)
        return self.enqueue_(message, delay=delay)


def test_a_copy_the_broker_refuses_for_now_holds_the_ack_until_it_is_enqueued(
    broker: StubBroker, backend: StubBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    down = redis.ConnectionError("refused")
    monkeypatch.setattr(broker, "enqueue", Flaky(broker, down, down))
    gate = deferrals(backend)
    original = delivered()
    gate.defer(broker, original, "k", OPTIONS, holders=1)
    assert queued(broker) == [] and not original.failed
    with pytest.raises(DeferralNotEnqueuedError):
        gate.enqueue_held(broker, original)  # the worker keeps the ack and tries again
    gate.enqueue_held(broker, original)
    assert [m.message_id for m in queued(broker)] == [original.message_id]
    gate.enqueue_held(broker, original)  # nothing held any more: nothing sent twice
    assert queued(broker) == []


def test_a_copy_that_can_never_be_enqueued_fails_the_original_and_takes_its_marker_away(
    broker: StubBroker, backend: StubBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = delivered(store_results=True)
    mine = marker(original.message_id, "job", "q")
    backend.mark_unless_pending(
        "test:gate:{k}",
        message_id=original.message_id,
        pending_ttl_ms=60_000,
        actor_name="job",
        queue_name="q",
    )
    monkeypatch.setattr(broker, "enqueue", Flaky(broker, ValueError("too large")))
    with pytest.raises(DeferralFailedError, match="ValueError: too large") as raised:
        deferrals(backend).defer(broker, original, "k", OPTIONS, holders=1)
    assert original.failed
    assert original._exception is raised.value, "the reason it is dead-lettered with"
    assert "ValueError: too large" in str(original._exception)
    assert original.options["store_results"] is True, "its own result option is back"
    assert mine not in backend.markers("test:gate:{k}")


def test_a_held_copy_that_turns_out_never_to_fit_is_given_up(
    broker: StubBroker, backend: StubBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        broker, "enqueue", Flaky(broker, redis.ConnectionError("refused"), ValueError("too large"))
    )
    gate = deferrals(backend)
    original = delivered()
    gate.defer(broker, original, "k", OPTIONS, holders=1)
    with pytest.raises(DeferralFailedError, match="can never be enqueued"):
        gate.enqueue_held(broker, original)
    assert original.failed
    assert "store_results" not in original.options


def test_a_marker_that_cannot_be_removed_is_warned_about_not_raised(
    backend: StubBackend, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(key: str, member: str) -> bool:
        raise redis.ConnectionError("refused")

    monkeypatch.setattr(backend, "release", broken)
    with caplog.at_level(logging.WARNING, logger="test.gate"):
        deferrals(backend).forget_marker("k", "m1", "job", "q")
    assert "covers others for at most 60000 ms" in caplog.text


def test_a_message_deferred_for_long_is_warned_about_once_a_period(
    broker: StubBroker, backend: StubBackend, caplog: pytest.LogCaptureFixture
) -> None:
    gate = deferrals(backend, warn_after_ms=1000)
    old = delivered(**{FIRST_DEFERRED_AT: 1, DEFERRALS: 5})
    young = delivered()
    with caplog.at_level(logging.WARNING, logger="test.gate"):
        gate.defer(broker, young, "k", OPTIONS, holders=1)
        gate.defer(broker, old, "k", OPTIONS, holders=1)
        gate.defer(broker, old, "k", OPTIONS, holders=1)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert old.message_id in warnings[0] and "(6 deferrals)" in warnings[0]


class RefusingDelays(StubBroker):
    """A broker that refuses every delayed message for good (past its longest delay)."""

    def enqueue(self, message: Message[Any], *, delay: int | None = None) -> Message[Any]:
        if delay:
            raise ValueError(f"delay {delay} ms is past this broker's maximum")
        return super().enqueue(message, delay=delay)


def test_a_deferral_given_up_for_good_dead_letters_its_message_with_the_real_reason() -> None:
    broker = RefusingDelays()
    results = ResultsStubBackend()
    broker.add_middleware(Results(backend=results))
    running, release = threading.Event(), threading.Event()
    with gate_with(backend=StubBackend(), concurrency_delay_ms=5) as gate:
        broker.add_middleware(gate)

        @dramatiq.actor(
            broker=broker, concurrency_key=lambda job, hold: job, max_retries=0, store_results=True
        )
        def job(name: str, hold: bool) -> str:
            if hold:
                running.set()
                release.wait(10)
            return name

        with worker_on(broker, threads=2, timeout_ms=20):
            holder = job.send("k", True)
            assert running.wait(10)
            refused = job.send("k", False)  # over the limit: its copy can never be enqueued
            deadline = time.monotonic() + 10
            while not broker.dead_letters and time.monotonic() < deadline:
                time.sleep(0.01)
            release.set()
            with pytest.raises(DeferralFailedError, match="ValueError: delay"):
                broker.join(job.queue_name, timeout=10_000)
        broker.close()
    assert holder.get_result(backend=results) == "k"
    with pytest.raises(ResultFailure) as failure:
        refused.get_result(backend=results)
    assert failure.value.orig_exc_type == "DeferralFailedError"
    assert "can never be enqueued: ValueError" in failure.value.orig_exc_msg
    assert [m.message_id for m in broker.dead_letters] == [refused.message_id]
