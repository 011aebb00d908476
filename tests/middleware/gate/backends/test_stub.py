"""``StubBackend``: the gate's leases and markers in this process's memory, on its clock.

The protocol both backends share is tested in ``test_base.py``; here, the
stub's own: expiry on ``time.time`` (moved by hand through ``server_clock``),
keys that vanish once nothing live is left on them, and one lock for threads.
"""

from __future__ import annotations

from functools import partial

import pytest

from middleware import StubBackend
from tests.middleware.gate.conftest import FakeServerClock
from tests.support.gate.leases import ACQUIRED, DEFER, take
from tests.support.threads import all_at_once

pytestmark = pytest.mark.timeout(30)

KEY = "test:gate:{k}"


@pytest.fixture
def stub(server_clock: FakeServerClock) -> StubBackend:
    return StubBackend()


def test_a_lease_runs_out_on_the_processs_clock(
    stub: StubBackend, server_clock: FakeServerClock
) -> None:
    take(stub, KEY, "h:a", limit=1, lease_ms=1000)
    server_clock.advance_ms(999)
    assert stub.holders(KEY) == ["h:a"]
    server_clock.advance_ms(1)
    assert stub.holders(KEY) == [], "a lease is gone at its expiry, not after"
    outcome = take(stub, KEY, "h:b", limit=1, lease_ms=1000)
    assert (outcome.decision, outcome.reclaimed) == (ACQUIRED, 0), "inspection purged it already"


def test_an_acquire_counts_only_expired_holders_as_reclaimed_not_markers(
    stub: StubBackend, server_clock: FakeServerClock
) -> None:
    take(stub, KEY, "h:a", limit=1, lease_ms=1000)
    take(stub, KEY, "h:m1", limit=1, message_id="m1", skip_if_pending=True, pending_ttl_ms=500)
    assert len(stub.markers(KEY)) == 1
    server_clock.advance_ms(1000)
    outcome = take(stub, KEY, "h:b", limit=1)
    assert (outcome.decision, outcome.reclaimed) == (ACQUIRED, 1)


def test_a_key_with_nothing_live_left_is_forgotten(
    stub: StubBackend, server_clock: FakeServerClock
) -> None:
    take(stub, KEY, "h:a", lease_ms=1000)
    stub.mark_unless_pending(
        "test:gate:{other}", message_id="m", pending_ttl_ms=2000, actor_name="a", queue_name="q"
    )
    assert stub.keys() == [KEY, "test:gate:{other}"]
    stub.release(KEY, "h:a")
    assert stub.keys() == ["test:gate:{other}"], "a released key is forgotten at once"
    server_clock.advance_ms(2000)
    assert stub.keys() == [], "an expired marker's key is forgotten too"


def test_renewing_does_not_purge_an_expired_lease_only_an_acquire_does(
    stub: StubBackend, server_clock: FakeServerClock
) -> None:
    take(stub, KEY, "h:a", limit=1, lease_ms=100)
    server_clock.advance_ms(200)
    # As the Lua script: a lease past its expiry but not purged yet is renewed.
    assert stub.renew(KEY, [("h:a", 1000)]) == []
    assert take(stub, KEY, "h:b", limit=1).decision == DEFER


def test_holders_are_listed_in_the_order_of_their_expiry(stub: StubBackend) -> None:
    take(stub, KEY, "h:late", limit=3, lease_ms=3000)
    take(stub, KEY, "h:early", limit=3, lease_ms=1000)
    take(stub, KEY, "h:middle", limit=3, lease_ms=2000)
    assert stub.holders(KEY) == ["h:early", "h:middle", "h:late"]


def test_threads_acquiring_at_once_never_exceed_the_limit(stub: StubBackend) -> None:
    def contend(n: int) -> list[str]:
        """The tokens of thread ``n``'s 50 tries that were let in."""
        tokens = (f"h:{n}:{i}" for i in range(50))
        return [
            t for t in tokens if take(stub, KEY, t, limit=3, lease_ms=60_000).decision == ACQUIRED
        ]

    won = [t for got in all_at_once([partial(contend, n) for n in range(8)]) for t in got]
    assert len(won) == 3
    assert sorted(stub.holders(KEY)) == sorted(won)
