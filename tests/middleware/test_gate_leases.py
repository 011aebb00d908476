"""The heartbeat that renews this process's leases, on both backends."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from middleware import GateBackend
from middleware.gate_backends import DEFER
from middleware.gate_leases import Heartbeat, Holding
from tests.middleware.conftest import FakeServerClock
from tests.support.gate.leases import Monotonic, expiry, stored_keys, take

pytestmark = pytest.mark.timeout(60)

KEY = "test:gate:{k}"


def test_a_holder_is_renewed_once_a_third_of_its_lease_has_passed(
    backend: GateBackend, server_clock: FakeServerClock
) -> None:
    leases = backend
    clock = Monotonic()
    lost: list[Holding] = []
    heartbeat = Heartbeat(leases, on_lost=lost.append, clock=clock)
    take(leases, KEY, "h:a", limit=1, lease_ms=900)
    holding = Holding(None, "k", KEY, "h:a", 900)
    heartbeat.add(holding)
    heartbeat.stop()  # drive renewals by hand
    first_expiry = expiry(backend, KEY, "h:a")

    clock.now += 0.2
    server_clock.advance_ms(200)
    assert heartbeat.renew_due() == pytest.approx(0.1)  # seconds until it is due
    assert expiry(backend, KEY, "h:a") == first_expiry

    for _ in range(10):  # ten thirds of a lease: three leases and more
        clock.now += 0.3
        server_clock.advance_ms(300)
        heartbeat.renew_due()
    assert expiry(backend, KEY, "h:a") == pytest.approx(server_clock.now * 1000 + 900, abs=1)
    assert take(leases, KEY, "h:b", limit=1, lease_ms=900).decision == DEFER
    assert lost == []


def test_a_holding_released_while_its_renewal_runs_is_not_reported_lost(
    backend: GateBackend, server_clock: FakeServerClock
) -> None:
    leases = backend
    clock = Monotonic()
    lost: list[Holding] = []
    heartbeat = Heartbeat(leases, on_lost=lost.append, clock=clock)
    take(leases, KEY, "h:a", limit=1, lease_ms=900)
    holding = Holding(None, "k", KEY, "h:a", 900)
    heartbeat.add(holding)
    heartbeat.stop()

    renew = leases.renew

    def release_first(key: str, due: Sequence[tuple[str, int]]) -> list[str]:
        heartbeat.forget(holding)  # the worker thread finishes in between
        leases.release(KEY, "h:a")
        return renew(key, due)

    leases.renew = release_first  # type: ignore[method-assign,assignment]
    clock.now += 1
    heartbeat.renew_due()
    assert lost == []
    assert KEY not in stored_keys(backend), "a released lease is never brought back"
