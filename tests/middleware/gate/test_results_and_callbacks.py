"""The gate beside Dramatiq's Results, Callbacks, Pipelines and GroupCallbacks.

A deferral is not a completion: no result is stored for the deferred
original, and callbacks fire once, when the copy really runs. A message whose
completion is observed is never skipped as covered. Each test runs on the
stub broker with ``StubBackend`` and on Redis (broker, gate and results).
"""

from __future__ import annotations

import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import dramatiq
import pytest
import redis
from dramatiq.brokers.redis import RedisBroker
from dramatiq.brokers.stub import StubBroker
from dramatiq.middleware import GroupCallbacks, SkipMessage
from dramatiq.rate_limits.backends import RedisBackend as RateLimitsRedis
from dramatiq.rate_limits.backends import StubBackend as RateLimitsStub
from dramatiq.results import ResultMissing, Results
from dramatiq.results.backends import RedisBackend as ResultsRedis
from dramatiq.results.backends import StubBackend as ResultsStub

from middleware import PerKeyConcurrency, StubBackend
from tests.middleware.gate.conftest import worker_on
from tests.support.gate.leases import take
from tests.support.gate.scenarios import delivery, metric
from tests.support.services import redis_test_url, require_redis

pytestmark = pytest.mark.timeout(90)


class Calls:
    """Thread-safe counts of what happened, for a test to wait on."""

    def __init__(self) -> None:
        self.counts: Counter[Any] = Counter()
        self.changed = threading.Condition()

    def add(self, what: Any) -> None:
        with self.changed:
            self.counts[what] += 1
            self.changed.notify_all()

    def wait_for(self, check: Any, timeout: float = 30) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: check(self.counts), timeout)


class SkipWatch(dramatiq.Middleware):
    """Counts the skipped deliveries of each actor (the gate's deferrals among them)."""

    def __init__(self) -> None:
        self.skips = Calls()
        self.barriers: set[str] = set()  # group barriers seen, for the cleanup

    def after_skip_message(self, broker: dramatiq.Broker, message: Any) -> None:
        if message.options.get("group_completion_uuid"):
            self.barriers.add(message.options["group_completion_uuid"])
        self.skips.add(message.actor_name)


@dataclass
class Setup:
    broker: dramatiq.Broker
    gate: PerKeyConcurrency
    results: Any
    skips: Calls


@pytest.fixture(params=["stub", "redis"])
def setup(request: pytest.FixtureRequest) -> Iterator[Setup]:
    """A broker with Results, GroupCallbacks and the gate (Callbacks and Pipelines are
    Dramatiq's defaults), on the stub or on Redis."""
    namespace = f"cwt-{uuid.uuid4().hex[:10]}"
    client: redis.Redis | None = None
    broker: dramatiq.Broker
    if request.param == "stub":
        broker = StubBroker()
        gate = PerKeyConcurrency(
            backend=StubBackend(), concurrency_delay_ms=5, concurrency_jitter_ms=5, metrics=True
        )
        results: Any = ResultsStub()
        barriers: Any = RateLimitsStub()
    else:
        require_redis()
        client = redis.Redis.from_url(redis_test_url())
        broker = RedisBroker(client=client, namespace=namespace)
        gate = PerKeyConcurrency(
            client=client,
            key_prefix=f"{namespace}:gate",
            concurrency_delay_ms=5,
            concurrency_jitter_ms=5,
            metrics=True,
        )
        # Prefixed keys: by default Dramatiq names a result by an MD5 alone,
        # outside the namespace the cleanup deletes.
        results = ResultsRedis(
            client=client, namespace=f"{namespace}-results", use_namespace_prefix_keys=True
        )
        barriers = RateLimitsRedis(client=client)
    broker.add_middleware(Results(backend=results))
    broker.add_middleware(GroupCallbacks(barriers, barrier_ttl=60_000))
    watch = SkipWatch()
    broker.add_middleware(watch)
    broker.add_middleware(gate)
    dramatiq.set_broker(broker)
    setup = Setup(broker, gate, results, watch.skips)
    yield setup
    gate.heartbeat.stop()
    broker.close()
    if client is not None:
        for key in client.scan_iter(match=f"{namespace}*"):  # this test's keys only
            client.delete(key)
        for name in watch.barriers:
            for key in client.scan_iter(match=f"*{name}*"):
                client.delete(key)
        client.close()


@pytest.fixture
def worker(setup: Setup) -> Iterator[dramatiq.Worker]:
    with worker_on(setup.broker, threads=4, timeout_ms=20) as worker:
        yield worker


def hold_slot(gate: PerKeyConcurrency, key: str) -> str:
    """Another process holds the key's only slot; returns the token to release."""
    token = f"h:other-{uuid.uuid4().hex[:6]}"
    take(gate.backend, gate.backend_key(key), token, limit=1, lease_ms=60_000)
    return token


def test_a_deferred_message_stores_no_result_until_it_really_runs(
    setup: Setup, worker: dramatiq.Worker
) -> None:
    ran = Calls()

    @dramatiq.actor(concurrency_key=lambda job: job, store_results=True, max_retries=0)
    def compute(job: str) -> str:
        ran.add(job)
        return f"done {job}"

    token = hold_slot(setup.gate, "job")
    message = compute.send("job")
    assert setup.skips.wait_for(lambda skips: skips["compute"] >= 3)
    with pytest.raises(ResultMissing):  # deferred three times, and no None stored for it
        message.get_result(backend=setup.results)
    assert ran.counts == Counter()

    setup.gate.backend.release(setup.gate.backend_key("job"), token)
    assert message.get_result(backend=setup.results, block=True, timeout=30_000) == "done job"
    assert ran.counts == Counter({"job": 1})


def test_callbacks_fire_once_per_message_when_it_runs_however_often_deferred(
    setup: Setup, worker: dramatiq.Worker
) -> None:
    succeeded = Calls()

    @dramatiq.actor(max_retries=0)
    def on_done(message_data: dict[str, Any], result: Any) -> None:
        succeeded.add(message_data["message_id"])

    @dramatiq.actor(concurrency_key=lambda job, n: job, on_success="on_done", max_retries=0)
    def step(job: str, n: int) -> int:
        return n

    token = hold_slot(setup.gate, "job")
    sent = [step.send("job", n).message_id for n in range(6)]
    assert setup.skips.wait_for(lambda skips: skips["step"] >= 6)
    assert succeeded.counts == Counter(), "a deferral fires no callback"
    setup.gate.backend.release(setup.gate.backend_key("job"), token)
    assert succeeded.wait_for(lambda counts: len(counts) == 6)
    setup.broker.join(step.queue_name, timeout=30_000)
    setup.broker.join(on_done.queue_name, timeout=30_000)
    assert succeeded.counts == Counter({message_id: 1 for message_id in sent})


def test_an_observed_message_is_never_skipped_under_another_messages_pending_copy(
    setup: Setup,
) -> None:
    @dramatiq.actor(
        concurrency_key=lambda job: job,
        concurrency_limit=1,
        concurrency_skip_if_pending=True,
        max_retries=0,
    )
    def fungible(job: str) -> None: ...

    gate = setup.gate
    running = delivery(fungible, "job")
    gate.before_process_message(setup.broker, running)  # holds the only slot
    with pytest.raises(SkipMessage, match="deferred"):  # its copy is now pending
        gate.before_process_message(setup.broker, delivery(fungible, "job"))
    with pytest.raises(SkipMessage, match="pending deferred copy"):  # unobserved: covered
        gate.before_process_message(setup.broker, delivery(fungible, "job"))

    for observed in (
        {"store_results": True},
        {"on_success": "fungible"},
        {"on_failure": "fungible"},
        {"pipe_target": fungible.message("next").asdict()},
        {"group_completion_uuid": "g", "group_completion_callbacks": []},
    ):
        message = delivery(fungible, "job", **observed)
        with pytest.raises(SkipMessage, match="over the per-key concurrency limit: deferred"):
            gate.before_process_message(setup.broker, message)
    assert metric(gate, "dramatiq_gate_skipped_pending", "fungible") == 1
    gate.after_process_message(setup.broker, running)


def test_a_group_of_coalescing_messages_completes_its_barrier_once(
    setup: Setup, worker: dramatiq.Worker
) -> None:
    ran = Calls()

    @dramatiq.actor(max_retries=0)
    def all_done() -> None:
        ran.add("completion")

    @dramatiq.actor(
        concurrency_key=lambda job, n: job,
        concurrency_limit=1,
        concurrency_skip_if_pending=True,
        max_retries=0,
    )
    def part(job: str, n: int) -> None:
        ran.add(n)

    token = hold_slot(setup.gate, "job")
    group = dramatiq.group(part.message("job", n) for n in range(5))
    group.add_completion_callback(all_done.message())
    group.run()
    assert setup.skips.wait_for(lambda skips: skips["part"] >= 5)
    setup.gate.backend.release(setup.gate.backend_key("job"), token)
    assert ran.wait_for(lambda counts: counts["completion"] == 1)
    setup.broker.join(part.queue_name, timeout=30_000)
    assert ran.counts == Counter({**{n: 1 for n in range(5)}, "completion": 1})
    assert metric(setup.gate, "dramatiq_gate_skipped_pending", "part") == 0


def test_a_pipeline_through_a_gated_actor_runs_each_step_once(
    setup: Setup, worker: dramatiq.Worker
) -> None:
    ran = Calls()

    @dramatiq.actor(
        concurrency_key=lambda job, *rest: job,
        concurrency_skip_if_pending=True,
        max_retries=0,
    )
    def first(job: str) -> int:
        ran.add("first")
        return 1

    @dramatiq.actor(max_retries=0)
    def second(value: int) -> None:
        ran.add(("second", value))

    token = hold_slot(setup.gate, "job")
    dramatiq.pipeline([first.message("job"), second.message()]).run()
    # Another message of the key, unobserved: deferred with its marker; the
    # pipeline's step, observed, is never covered by it, and runs itself.
    first.send("job")
    assert setup.skips.wait_for(lambda skips: skips["first"] >= 2)
    setup.gate.backend.release(setup.gate.backend_key("job"), token)
    assert ran.wait_for(lambda counts: counts[("second", 1)] == 1)
    setup.broker.join(first.queue_name, timeout=30_000)
    assert ran.counts == Counter({"first": 2, ("second", 1): 1})
