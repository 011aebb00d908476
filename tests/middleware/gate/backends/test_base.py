"""The backend protocol (``GateBackend``): the gate's atomic steps, the same on
both backends (the Lua scripts on fakeredis, and the stub), with a hand-moved clock.

What only one backend does is in ``test_redis.py`` and ``test_stub.py`` beside this.
"""

from __future__ import annotations

from typing import Any

import pytest

from middleware import GateBackend, RedisBackend
from middleware.gate.backends.base import DEBOUNCE, marker, marker_prefix
from tests.middleware.gate.conftest import FakeServerClock
from tests.support.gate import leases as lease_helpers
from tests.support.gate.leases import ACQUIRED, DEFER, SKIPPED, Outcome

pytestmark = pytest.mark.timeout(30)

KEY = "test:gate:{repo:sha}"


@pytest.fixture
def leases(backend: GateBackend, server_clock: FakeServerClock) -> GateBackend:
    return backend


def take(leases: GateBackend, token: str, **kw: Any) -> Outcome:
    return lease_helpers.take(leases, KEY, token, **kw)


def test_holders_up_to_the_limit_acquire_and_the_next_is_deferred(leases: GateBackend) -> None:
    assert take(leases, "h:a").decision == ACQUIRED
    second = take(leases, "h:b")
    assert (second.decision, second.holders) == (ACQUIRED, 2)
    third = take(leases, "h:c")
    assert (third.decision, third.holders) == (DEFER, 2)


def test_a_released_slot_can_be_taken_again(leases: GateBackend) -> None:
    take(leases, "h:a", limit=1)
    assert take(leases, "h:b", limit=1).decision == DEFER
    assert leases.release(KEY, "h:a") is True
    assert take(leases, "h:b", limit=1).decision == ACQUIRED


def test_an_expired_lease_is_reclaimed_by_the_next_acquire(
    leases: GateBackend, server_clock: FakeServerClock
) -> None:
    take(leases, "h:dead", limit=1, lease_ms=1000)
    server_clock.advance_ms(999)
    assert take(leases, "h:b", limit=1).decision == DEFER
    server_clock.advance_ms(2)
    outcome = take(leases, "h:b", limit=1)
    assert (outcome.decision, outcome.reclaimed) == (ACQUIRED, 1)
    assert leases.release(KEY, "h:dead") is False


def test_a_renewed_lease_outlives_its_first_expiry(
    leases: GateBackend, server_clock: FakeServerClock
) -> None:
    take(leases, "h:a", limit=1, lease_ms=1000)
    for _ in range(5):
        server_clock.advance_ms(600)
        assert leases.renew(KEY, [("h:a", 1000)]) == []
    assert take(leases, "h:b", limit=1).decision == DEFER
    server_clock.advance_ms(1001)
    assert take(leases, "h:b", limit=1).reclaimed == 1


def test_renewing_a_reclaimed_lease_reports_it_lost(
    leases: GateBackend, server_clock: FakeServerClock
) -> None:
    take(leases, "h:a", limit=1, lease_ms=100)
    take(leases, "h:keep", limit=5, lease_ms=10_000)
    server_clock.advance_ms(200)
    take(leases, "h:c", limit=5)
    assert leases.renew(KEY, [("h:a", 100), ("h:keep", 10_000)]) == ["h:a"]


def test_the_gate_key_expires_with_its_longest_lease(
    leases: GateBackend, server_clock: FakeServerClock
) -> None:
    take(leases, "h:a", lease_ms=5_000)
    take(leases, "h:b", lease_ms=20_000)
    if isinstance(leases, RedisBackend):
        expire_at = leases.client.pexpiretime(KEY)
        assert expire_at == int(server_clock.now * 1000) + 20_000 + 1000
    server_clock.advance_ms(5_001)
    assert leases.holders(KEY) == ["h:b"]
    server_clock.advance_ms(15_000)
    assert leases.holders(KEY) == []


def test_coalescing_marks_one_pending_copy_and_coalesces_the_others(leases: GateBackend) -> None:
    take(leases, "h:a", limit=1)
    first = take(leases, "h:m1", limit=1, message_id="m1", skip_if_pending=True)
    assert first.decision == DEFER
    for other in ("m2", "m3"):
        later = take(leases, f"h:{other}", limit=1, message_id=other, skip_if_pending=True)
        assert later.decision == SKIPPED
    assert later.pending == "m1", "the skipped message is told whose copy does its work"
    again = take(leases, "h:m1-2", limit=1, message_id="m1", skip_if_pending=True)
    assert again.decision == DEFER, "the pending copy is never coalesced under itself"


def test_the_marker_is_cleared_when_the_pending_copy_starts(
    leases: GateBackend,
) -> None:
    take(leases, "h:a", limit=1)
    take(leases, "h:m1", limit=1, message_id="m1", skip_if_pending=True)
    leases.release(KEY, "h:a")
    started = take(leases, "h:m1-2", limit=1, message_id="m1", skip_if_pending=True)
    assert (started.decision, started.holders) == (ACQUIRED, 1)
    assert (leases.holders(KEY), leases.markers(KEY)) == (["h:m1-2"], [])
    after = take(leases, "h:m2", limit=1, message_id="m2", skip_if_pending=True)
    assert after.decision == DEFER, "a message after the copy started gets its own copy"


def test_an_expired_marker_stops_coalescing_and_is_not_a_holder(
    leases: GateBackend, server_clock: FakeServerClock
) -> None:
    take(leases, "h:a", limit=2, lease_ms=60_000)
    take(leases, "h:b", limit=2, lease_ms=60_000)
    take(leases, "h:m1", message_id="m1", skip_if_pending=True, pending_ttl_ms=1000)
    server_clock.advance_ms(1001)
    outcome = take(leases, "h:m2", message_id="m2", skip_if_pending=True, pending_ttl_ms=1000)
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
    leases: GateBackend,
) -> None:
    mark: dict[str, Any] = {"pending_ttl_ms": 1000, "actor_name": "finish", "queue_name": "q"}
    assert leases.mark_unless_pending(KEY, message_id="m1", **mark) == ""
    assert leases.mark_unless_pending(KEY, message_id="m2", **mark) == "m1"
    assert leases.markers(KEY) == [marker("m1", "finish", "q")]
    assert leases.holders(KEY) == [], "a marker is not a holder"


def test_a_marker_covers_only_messages_of_its_own_actor_and_queue(leases: GateBackend) -> None:
    leases.mark_unless_pending(
        KEY, message_id="m1", pending_ttl_ms=1000, actor_name="finish", queue_name="q"
    )
    for actor, queue in (("notify", "q"), ("finish", "other")):
        found = leases.mark_unless_pending(
            KEY,
            message_id=f"{actor}-{queue}",
            pending_ttl_ms=1000,
            actor_name=actor,
            queue_name=queue,
        )
        assert found == "", f"{actor} on {queue} is not covered by finish's marker on q"
    assert len(leases.markers(KEY)) == 3


def test_a_marker_set_at_enqueue_runs_out_after_its_ttl(
    leases: GateBackend, server_clock: FakeServerClock
) -> None:
    mark: dict[str, Any] = {"pending_ttl_ms": 1000, "actor_name": "a", "queue_name": "q"}
    leases.mark_unless_pending(KEY, message_id="m1", **mark)
    server_clock.advance_ms(1001)
    assert leases.mark_unless_pending(KEY, message_id="m2", **mark) == ""


def test_a_debounce_window_is_opened_by_one_message_and_covers_the_others(
    leases: GateBackend, server_clock: FakeServerClock
) -> None:
    window = {"debounce_ms": 500, "skip_if_pending": True, "actor_name": "a", "queue_name": "q"}
    opened = take(leases, "h:m1", message_id="m1", **window)
    assert (opened.decision, opened.holders) == (DEBOUNCE, 0)
    covered = take(leases, "h:m2", message_id="m2", **window)
    assert (covered.decision, covered.pending) == (SKIPPED, "m1")
    again = take(leases, "h:m1", message_id="m1", **window)
    assert again.decision == DEBOUNCE, "a redelivery of the opener finds its own marker"
    assert leases.holders(KEY) == [], "a window takes no slot"


def test_releasing_a_member_that_is_not_there_says_so(leases: GateBackend) -> None:
    assert leases.release(KEY, "h:never") is False
    take(leases, "h:a")
    assert leases.release(KEY, "h:a") is True
    assert leases.release(KEY, "h:a") is False
