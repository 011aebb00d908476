"""The backend contract (``GateBackend``): the gate's atomic steps, the same on
every backend. One parametrised fixture runs each test on the ``StubBackend``,
on the Lua scripts in fakeredis (both on a clock moved by hand) and on the Lua
scripts in real Redis (its own clock: moving it means waiting, so every
expiry here is checked with a margin either side).

What only one backend does is in ``test_redis.py`` and ``test_stub.py`` beside this.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any, NamedTuple, Protocol

import fakeredis
import pytest

from middleware import GateBackend, RedisBackend, StubBackend
from middleware.gate.backends.base import DEBOUNCE, marker, marker_prefix
from tests.support.gate import leases as lease_helpers
from tests.support.gate.leases import ACQUIRED, DEFER, SKIPPED, Outcome

pytestmark = pytest.mark.timeout(60)


class Clock(Protocol):
    """The backend's clock, as a test moves it."""

    @property
    def now(self) -> float: ...

    def advance_ms(self, ms: float) -> None: ...


class RedisClock:
    """Real Redis's clock (``TIME``): moving it means waiting."""

    def __init__(self, client: Any) -> None:
        self.client = client

    @property
    def now(self) -> float:
        seconds, micros = self.client.time()
        return int(seconds) + int(micros) / 1e6

    def advance_ms(self, ms: float) -> None:
        time.sleep(ms / 1000)


class Contract(NamedTuple):
    backend: GateBackend
    clock: Clock
    key: str


@pytest.fixture(params=["stub", "fakeredis", pytest.param("redis", marks=pytest.mark.integration)])
def contract(request: pytest.FixtureRequest) -> Iterator[Contract]:
    """The backend under test, its clock, and a key of this test's own."""
    key = f"test:gate:{uuid.uuid4().hex[:8]}:{{repo:sha}}"
    if request.param == "redis":
        client = request.getfixturevalue("redis_client")  # the shared test Redis
        yield Contract(RedisBackend(client), RedisClock(client), key)
        client.delete(key)
        return
    clock = request.getfixturevalue("server_clock")  # fakeredis's TIME and the stub's clock
    if request.param == "stub":
        yield Contract(StubBackend(), clock, key)
        return
    client = fakeredis.FakeRedis()
    yield Contract(RedisBackend(client), clock, key)
    client.close()


@pytest.fixture
def leases(contract: Contract) -> GateBackend:
    return contract.backend


@pytest.fixture
def clock(contract: Contract) -> Clock:
    return contract.clock


@pytest.fixture
def key(contract: Contract) -> str:
    return contract.key


def take(leases: GateBackend, key: str, token: str, **kw: Any) -> Outcome:
    return lease_helpers.take(leases, key, token, **kw)


def test_holders_up_to_the_limit_acquire_and_the_next_is_deferred(
    leases: GateBackend, key: str
) -> None:
    assert take(leases, key, "h:a").decision == ACQUIRED
    second = take(leases, key, "h:b")
    assert (second.decision, second.holders) == (ACQUIRED, 2)
    third = take(leases, key, "h:c")
    assert (third.decision, third.holders) == (DEFER, 2)


def test_a_released_slot_can_be_taken_again(leases: GateBackend, key: str) -> None:
    take(leases, key, "h:a", limit=1)
    assert take(leases, key, "h:b", limit=1).decision == DEFER
    assert leases.release(key, "h:a") is True
    assert take(leases, key, "h:b", limit=1).decision == ACQUIRED


def test_an_expired_lease_is_reclaimed_by_the_next_acquire(
    leases: GateBackend, clock: Clock, key: str
) -> None:
    take(leases, key, "h:dead", limit=1, lease_ms=400)
    clock.advance_ms(200)
    assert take(leases, key, "h:b", limit=1).decision == DEFER
    clock.advance_ms(250)
    outcome = take(leases, key, "h:b", limit=1)
    assert (outcome.decision, outcome.reclaimed) == (ACQUIRED, 1)
    assert leases.release(key, "h:dead") is False


def test_a_renewed_lease_outlives_its_first_expiry(
    leases: GateBackend, clock: Clock, key: str
) -> None:
    take(leases, key, "h:a", limit=1, lease_ms=400)
    for _ in range(4):  # 800 ms in all: twice the lease
        clock.advance_ms(200)
        assert leases.renew(key, [("h:a", 400)]) == []
    assert take(leases, key, "h:b", limit=1).decision == DEFER
    clock.advance_ms(450)
    assert take(leases, key, "h:b", limit=1).reclaimed == 1


def test_renewing_a_reclaimed_lease_reports_it_lost(
    leases: GateBackend, clock: Clock, key: str
) -> None:
    take(leases, key, "h:a", limit=1, lease_ms=100)
    take(leases, key, "h:keep", limit=5, lease_ms=10_000)
    clock.advance_ms(200)
    take(leases, key, "h:c", limit=5)
    assert leases.renew(key, [("h:a", 100), ("h:keep", 10_000)]) == ["h:a"]


def test_the_gate_key_expires_with_its_longest_lease(
    leases: GateBackend, clock: Clock, key: str
) -> None:
    take(leases, key, "h:a", lease_ms=300)
    take(leases, key, "h:b", lease_ms=900)
    if isinstance(leases, RedisBackend):
        expire_at = leases.client.pexpiretime(key)
        assert expire_at == pytest.approx(clock.now * 1000 + 900 + 1000, abs=100)
    clock.advance_ms(500)
    assert leases.holders(key) == ["h:b"]
    clock.advance_ms(550)
    assert leases.holders(key) == []


def test_coalescing_marks_one_pending_copy_and_coalesces_the_others(
    leases: GateBackend, key: str
) -> None:
    take(leases, key, "h:a", limit=1)
    first = take(leases, key, "h:m1", limit=1, message_id="m1", skip_if_pending=True)
    assert first.decision == DEFER
    for other in ("m2", "m3"):
        later = take(leases, key, f"h:{other}", limit=1, message_id=other, skip_if_pending=True)
        assert later.decision == SKIPPED
    assert later.pending == "m1", "the skipped message is told whose copy does its work"
    again = take(leases, key, "h:m1-2", limit=1, message_id="m1", skip_if_pending=True)
    assert again.decision == DEFER, "the pending copy is never coalesced under itself"


def test_the_marker_is_cleared_when_the_pending_copy_starts(leases: GateBackend, key: str) -> None:
    take(leases, key, "h:a", limit=1)
    take(leases, key, "h:m1", limit=1, message_id="m1", skip_if_pending=True)
    leases.release(key, "h:a")
    started = take(leases, key, "h:m1-2", limit=1, message_id="m1", skip_if_pending=True)
    assert (started.decision, started.holders) == (ACQUIRED, 1)
    assert (leases.holders(key), leases.markers(key)) == (["h:m1-2"], [])
    after = take(leases, key, "h:m2", limit=1, message_id="m2", skip_if_pending=True)
    assert after.decision == DEFER, "a message after the copy started gets its own copy"


def test_an_expired_marker_stops_coalescing_and_is_not_a_holder(
    leases: GateBackend, clock: Clock, key: str
) -> None:
    take(leases, key, "h:a", limit=2, lease_ms=60_000)
    take(leases, key, "h:b", limit=2, lease_ms=60_000)
    take(leases, key, "h:m1", message_id="m1", skip_if_pending=True, pending_ttl_ms=300)
    clock.advance_ms(350)
    outcome = take(leases, key, "h:m2", message_id="m2", skip_if_pending=True, pending_ttl_ms=300)
    assert (outcome.decision, outcome.holders, outcome.reclaimed) == (DEFER, 2, 0)


def test_a_markers_prefix_names_its_actor_and_queue_so_no_prefix_is_anothers() -> None:
    assert marker_prefix("finish", "covworker") == "p:6:finish:covworker/"
    # Without the length, actor "a:b" on queue "c" and actor "a" on "b:c" would share one.
    assert marker_prefix("a:b", "c") != marker_prefix("a", "b:c")
    assert marker("m1", "finish", "covworker") == "p:6:finish:covworker/m1"


def test_a_caller_naming_no_actor_or_queue_is_covered_by_every_marker() -> None:
    assert marker_prefix("", "") == ""
    assert marker("m1", "", "") == "p:m1"


def test_mark_unless_pending_marks_the_first_and_names_it_to_the_next(
    leases: GateBackend, key: str
) -> None:
    mark: dict[str, Any] = {"pending_ttl_ms": 1000, "actor_name": "finish", "queue_name": "q"}
    assert leases.mark_unless_pending(key, message_id="m1", **mark) == ""
    assert leases.mark_unless_pending(key, message_id="m2", **mark) == "m1"
    assert leases.markers(key) == [marker("m1", "finish", "q")]
    assert leases.holders(key) == [], "a marker is not a holder"


def test_a_marker_covers_only_messages_of_its_own_actor_and_queue(
    leases: GateBackend, key: str
) -> None:
    leases.mark_unless_pending(
        key, message_id="m1", pending_ttl_ms=1000, actor_name="finish", queue_name="q"
    )
    for actor, queue in (("notify", "q"), ("finish", "other")):
        found = leases.mark_unless_pending(
            key,
            message_id=f"{actor}-{queue}",
            pending_ttl_ms=1000,
            actor_name=actor,
            queue_name=queue,
        )
        assert found == "", f"{actor} on {queue} is not covered by finish's marker on q"
    assert len(leases.markers(key)) == 3


def test_a_marker_set_at_enqueue_runs_out_after_its_ttl(
    leases: GateBackend, clock: Clock, key: str
) -> None:
    mark: dict[str, Any] = {"pending_ttl_ms": 300, "actor_name": "a", "queue_name": "q"}
    leases.mark_unless_pending(key, message_id="m1", **mark)
    assert leases.mark_unless_pending(key, message_id="m2", **mark) == "m1"
    clock.advance_ms(350)
    assert leases.mark_unless_pending(key, message_id="m2", **mark) == ""


def test_a_debounce_window_is_opened_by_one_message_and_covers_the_others(
    leases: GateBackend, clock: Clock, key: str
) -> None:
    window = {"debounce_ms": 500, "skip_if_pending": True, "actor_name": "a", "queue_name": "q"}
    opened = take(leases, key, "h:m1", message_id="m1", **window)
    assert (opened.decision, opened.holders) == (DEBOUNCE, 0)
    covered = take(leases, key, "h:m2", message_id="m2", **window)
    assert (covered.decision, covered.pending) == (SKIPPED, "m1")
    again = take(leases, key, "h:m1", message_id="m1", **window)
    assert again.decision == DEBOUNCE, "a redelivery of the opener finds its own marker"
    assert leases.holders(key) == [], "a window takes no slot"


def test_releasing_a_member_that_is_not_there_says_so(leases: GateBackend, key: str) -> None:
    assert leases.release(key, "h:never") is False
    take(leases, key, "h:a")
    assert leases.release(key, "h:a") is True
    assert leases.release(key, "h:a") is False
