"""The gate's atomic steps on both backends, with a hand-moved clock."""

from __future__ import annotations

from typing import Any

import pytest

from middleware import GateBackend, PerKeyConcurrency, RedisBackend
from tests.middleware.conftest import FakeServerClock
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


def test_every_script_touches_one_hash_tagged_key_so_it_runs_on_redis_cluster(
    gate: PerKeyConcurrency,
) -> None:
    import re
    from pathlib import Path

    import middleware

    scripts = sorted((Path(middleware.__file__).parent / "lua").glob("*.lua"))
    assert [s.name for s in scripts] == [
        "gate_acquire.lua",
        "gate_mark.lua",
        "gate_release.lua",
        "gate_renew.lua",
    ]
    for script in scripts:
        code = "\n".join(
            line for line in script.read_text().splitlines() if not line.startswith("--")
        )
        assert set(re.findall(r"KEYS\[(\d+)\]", code)) == {"1"}, script.name
    # The key is hash-tagged on the gate key alone: every script's one key, one slot.
    assert gate.redis_key("1:abc") == "test:gate:{1:abc}"
