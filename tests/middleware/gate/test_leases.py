"""The heartbeat that renews this process's leases: what ``renew_due`` renews,
when it reports a lease lost, and the one daemon thread that calls it.

Most tests drive ``renew_due`` by hand on a clock moved by hand; the tests
of the thread wait on a condition with a deadline.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence

import pytest

import middleware.gate._leases as gate_leases
from middleware import GateBackend, StubBackend
from middleware.gate._leases import Heartbeat, Holding
from middleware.gate.backends import DEFER
from tests.middleware.gate.conftest import FakeServerClock
from tests.support.gate.leases import Monotonic, expiry, stored_keys, take
from tests.support.threads import CountedStop

pytestmark = pytest.mark.timeout(60)

KEY = "test:gate:{k}"
OTHER_KEY = "test:gate:{j}"

#: How long a test waits for the heartbeat's thread before it fails (s).
DEADLINE_S = 10.0


class RecordingStub(StubBackend):
    """A ``StubBackend`` that records each renewal call, for tests to assert or wait on."""

    def __init__(self) -> None:
        super().__init__()
        self.renewals: list[tuple[str, list[str]]] = []
        self.changed = threading.Condition()

    def renew(self, key: str, leases: Sequence[tuple[str, int]]) -> list[str]:
        lost = super().renew(key, leases)
        with self.changed:
            self.renewals.append((key, [token for token, _ in leases]))
            self.changed.notify_all()
        return lost

    def renewed(self, token: str) -> int:
        with self.changed:
            return sum(tokens.count(token) for _, tokens in self.renewals)

    def wait_renewed(self, token: str, times: int) -> bool:
        """True once ``token`` was renewed ``times`` times (False after ``DEADLINE_S``)."""
        with self.changed:
            return self.changed.wait_for(
                lambda: sum(t.count(token) for _, t in self.renewals) >= times, DEADLINE_S
            )


class Lost:
    """An ``on_lost`` callback that records, and lets a test wait for, lost holdings."""

    def __init__(self) -> None:
        self.holdings: list[Holding] = []
        self.changed = threading.Condition()

    def __call__(self, holding: Holding) -> None:
        with self.changed:
            self.holdings.append(holding)
            self.changed.notify_all()

    def wait_for(self, count: int) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: len(self.holdings) >= count, DEADLINE_S)


@pytest.fixture
def stub() -> RecordingStub:
    return RecordingStub()


@pytest.fixture
def lost() -> Lost:
    return Lost()


@pytest.fixture
def heartbeat(stub: RecordingStub, lost: Lost) -> Iterator[Heartbeat]:
    """A heartbeat on ``stub`` reporting to ``lost``, for the tests of its thread;
    stopped, its thread joined, when the test ends."""
    heartbeat = Heartbeat(stub, on_lost=lost)
    yield heartbeat
    heartbeat.stop()


def hold(backend: GateBackend, token: str, lease_ms: int, key: str = KEY) -> Holding:
    """A holding of ``token`` on ``key``, its lease taken in ``backend``."""
    assert take(backend, key, token, limit=10, lease_ms=lease_ms).decision != DEFER
    return Holding(None, "k", key, token, lease_ms)


def by_hand(backend: GateBackend, *holdings: Holding) -> tuple[Heartbeat, Monotonic, Lost]:
    """A heartbeat with ``holdings`` whose thread is stopped, to call ``renew_due`` by hand."""
    clock, lost = Monotonic(), Lost()
    heartbeat = Heartbeat(backend, on_lost=lost, clock=clock)
    for holding in holdings:
        heartbeat.add(holding)
    heartbeat.stop()
    return heartbeat, clock, lost


def assert_no_renewal_failed(caplog: pytest.LogCaptureFixture) -> None:
    """The thread logs, and survives, what renew_due raises: a test fails on that line."""
    failures = [r for r in caplog.records if r.name.startswith(gate_leases.__name__)]
    assert failures == [], [r.getMessage() for r in failures]


def test_a_holder_is_renewed_once_a_third_of_its_lease_has_passed(
    backend: GateBackend, server_clock: FakeServerClock
) -> None:
    leases = backend
    heartbeat, clock, lost = by_hand(leases, hold(leases, "h:a", 900))
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
    assert lost.holdings == []


def test_a_holding_released_while_its_renewal_runs_is_not_reported_lost(
    backend: GateBackend, server_clock: FakeServerClock
) -> None:
    leases = backend
    holding = hold(leases, "h:a", 900)
    heartbeat, clock, lost = by_hand(leases, holding)

    renew = leases.renew

    def release_first(key: str, due: Sequence[tuple[str, int]]) -> list[str]:
        heartbeat.forget(holding)  # the worker thread finishes in between
        leases.release(KEY, "h:a")
        return renew(key, due)

    leases.renew = release_first  # type: ignore[method-assign,assignment]
    clock.now += 1
    heartbeat.renew_due()
    assert lost.holdings == []
    assert KEY not in stored_keys(backend), "a released lease is never brought back"


def test_renew_due_renews_only_the_holdings_a_third_of_their_lease_old(
    stub: RecordingStub,
) -> None:
    short, long = hold(stub, "h:short", 900), hold(stub, "h:long", 3000, OTHER_KEY)
    heartbeat, clock, lost = by_hand(stub, short, long)

    clock.now += 0.1
    assert heartbeat.renew_due() == pytest.approx(0.2)  # until the short one is due
    assert stub.renewals == []

    clock.now += 0.2  # a third of 900 ms: only the short one is due
    assert heartbeat.renew_due() == pytest.approx(0.3)  # a third of its lease again
    assert stub.renewals == [(KEY, ["h:short"])]
    assert short.renewed_at == clock.now

    clock.now += 0.3  # 0.6 s: the short one again; the long one is due at 1 s
    heartbeat.renew_due()
    clock.now += 0.3
    assert heartbeat.renew_due() == pytest.approx(0.1)  # the long one, due at 1 s
    assert stub.renewed("h:short") == 3
    assert stub.renewed("h:long") == 0

    clock.now += 0.1
    heartbeat.renew_due()
    assert stub.renewed("h:long") == 1
    assert lost.holdings == []


def test_renew_due_renews_what_is_due_within_one_tick_rather_than_wake_again(
    stub: RecordingStub,
) -> None:
    holding = hold(stub, "h:a", 900)
    heartbeat, clock, _ = by_hand(stub, holding)
    clock.now += 0.29  # 10 ms short of a third of the lease
    heartbeat.renew_due()
    assert stub.renewed("h:a") == 1
    assert holding.renewed_at == clock.now


def test_the_holdings_due_on_one_key_are_renewed_in_one_call(stub: RecordingStub) -> None:
    a, b, c = hold(stub, "h:a", 900), hold(stub, "h:b", 900), hold(stub, "h:c", 900, OTHER_KEY)
    heartbeat, clock, _ = by_hand(stub, a, b, c)
    clock.now += 0.3
    heartbeat.renew_due()
    calls = sorted((key, sorted(tokens)) for key, tokens in stub.renewals)
    assert calls == [(OTHER_KEY, ["h:c"]), (KEY, ["h:a", "h:b"])]


def test_a_renewal_extends_the_lease_from_the_backends_now(
    stub: RecordingStub, server_clock: FakeServerClock
) -> None:
    holding = hold(stub, "h:a", 900)
    heartbeat, clock, _ = by_hand(stub, holding)
    clock.now += 0.3
    server_clock.advance_ms(300)
    heartbeat.renew_due()
    assert expiry(stub, KEY, "h:a") == pytest.approx(server_clock.now * 1000 + 900, abs=1)


def test_a_holding_whose_lease_is_gone_is_reported_lost_once_and_no_longer_renewed(
    stub: RecordingStub,
) -> None:
    gone, kept = hold(stub, "h:gone", 900), hold(stub, "h:kept", 900, OTHER_KEY)
    heartbeat, clock, lost = by_hand(stub, gone, kept)
    assert stub.release(KEY, "h:gone")  # another process reclaimed it

    clock.now += 0.3
    heartbeat.renew_due()
    assert lost.holdings == [gone]
    assert (gone.lost, kept.lost) == (True, False)

    for _ in range(3):
        clock.now += 0.3
        heartbeat.renew_due()
    assert lost.holdings == [gone], "reported once"
    assert stub.renewed("h:gone") == 1, "not renewed after it was found gone"
    assert stub.renewed("h:kept") == 4


def test_with_every_holding_lost_the_heartbeat_sleeps_until_a_new_holding_wakes_it(
    stub: RecordingStub,
) -> None:
    holding = hold(stub, "h:a", 900)
    heartbeat, clock, lost = by_hand(stub, holding)
    stub.release(KEY, "h:a")
    clock.now += 0.3
    assert heartbeat.renew_due() >= 60
    assert lost.holdings == [holding]


def test_a_forgotten_holding_is_no_longer_renewed_nor_reported_lost(
    stub: RecordingStub,
) -> None:
    holding = hold(stub, "h:a", 900)
    heartbeat, clock, lost = by_hand(stub, holding)
    heartbeat.forget(holding)
    stub.release(KEY, "h:a")
    for _ in range(3):
        clock.now += 0.3
        heartbeat.renew_due()
    assert stub.renewals == []
    assert lost.holdings == []
    heartbeat.forget(holding)  # forgetting twice is harmless


def test_a_failed_renewal_is_logged_and_retried_no_sooner_than_a_quarter_second(
    stub: RecordingStub, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    holding = hold(stub, "h:a", 60)  # due every 20 ms
    heartbeat, clock, lost = by_hand(stub, holding)
    renew = stub.renew

    def unreachable(key: str, leases: Sequence[tuple[str, int]]) -> list[str]:
        raise ConnectionError("backend unreachable")

    monkeypatch.setattr(stub, "renew", unreachable)
    clock.now += 0.02
    assert heartbeat.renew_due() == 0.25
    assert "backend unreachable" in caplog.text
    assert holding.renewed_at == 100.0, "not renewed: still due"
    assert lost.holdings == [], "unreachable is not lost"

    monkeypatch.setattr(stub, "renew", renew)
    clock.now += 0.25
    heartbeat.renew_due()
    assert holding.renewed_at == clock.now


def test_the_thread_is_started_by_the_first_holding_only(
    stub: RecordingStub, heartbeat: Heartbeat, caplog: pytest.LogCaptureFixture
) -> None:
    assert heartbeat._thread is None, "no thread before the first holding"

    heartbeat.add(hold(stub, "h:a", 300))
    thread = heartbeat._thread
    assert thread is not None and thread.is_alive() and thread.daemon
    heartbeat.add(hold(stub, "h:b", 300))
    assert heartbeat._thread is thread
    assert stub.wait_renewed("h:a", 3) and stub.wait_renewed("h:b", 3)
    assert_no_renewal_failed(caplog)


def test_the_thread_keeps_a_lease_held_over_several_leases(
    stub: RecordingStub,
    heartbeat: Heartbeat,
    lost: Lost,
    caplog: pytest.LogCaptureFixture,
) -> None:
    heartbeat.add(hold(stub, "h:a", 300))
    assert stub.wait_renewed("h:a", 9), "nine renewals: three leases have passed"
    assert take(stub, KEY, "h:late", limit=1, lease_ms=300).decision == DEFER
    assert lost.holdings == []
    assert_no_renewal_failed(caplog)


def test_a_holding_due_sooner_wakes_the_thread_sleeping_for_a_later_one(
    stub: RecordingStub, heartbeat: Heartbeat, caplog: pytest.LogCaptureFixture
) -> None:
    heartbeat._wake = sleeps = CountedStop()
    heartbeat.add(hold(stub, "h:slow", 90_000))
    assert sleeps.wait_rounds(1), "the thread went to sleep for 30 s"
    heartbeat.add(hold(stub, "h:fast", 150))
    assert stub.wait_renewed("h:fast", 2)
    assert stub.renewed("h:slow") == 0
    assert_no_renewal_failed(caplog)


def test_the_thread_reports_a_lease_gone_to_on_lost(
    stub: RecordingStub,
    heartbeat: Heartbeat,
    lost: Lost,
    caplog: pytest.LogCaptureFixture,
) -> None:
    holding = hold(stub, "h:a", 150)
    heartbeat.add(holding)
    stub.release(KEY, "h:a")
    assert lost.wait_for(1)
    assert lost.holdings == [holding] and holding.lost
    assert_no_renewal_failed(caplog)


def test_stop_ends_the_thread_and_a_later_holding_starts_it_again(
    stub: RecordingStub, heartbeat: Heartbeat, caplog: pytest.LogCaptureFixture
) -> None:
    heartbeat.stop()  # before any thread: harmless
    heartbeat.add(hold(stub, "h:a", 90_000))  # the thread sleeps for 30 s
    first = heartbeat._thread
    assert first is not None and first.is_alive()

    stopping = threading.Thread(target=heartbeat.stop)
    stopping.start()
    stopping.join(DEADLINE_S)
    assert not stopping.is_alive(), "stop wakes the sleeping thread rather than wait 30 s"
    assert not first.is_alive(), "stop joins the thread"

    heartbeat.add(hold(stub, "h:b", 150))
    assert heartbeat._thread is not first and heartbeat._thread is not None
    assert heartbeat._thread.is_alive()
    assert stub.wait_renewed("h:b", 2)
    assert_no_renewal_failed(caplog)


def test_after_a_fork_the_first_holding_starts_the_childs_own_thread(
    stub: RecordingStub,
    heartbeat: Heartbeat,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    heartbeat.add(hold(stub, "h:a", 90_000))
    parents = heartbeat._thread
    assert parents is not None

    # A forked child inherits the object but not the thread: it sees another pid.
    child_pid = os.getpid() + 1
    monkeypatch.setattr(gate_leases.os, "getpid", lambda: child_pid)
    heartbeat.add(hold(stub, "h:b", 150))
    childs = heartbeat._thread
    assert childs is not None and childs is not parents and childs.is_alive()
    assert heartbeat._pid == child_pid
    assert stub.wait_renewed("h:b", 2)

    heartbeat.stop()
    parents.join(DEADLINE_S)  # stop ends the inherited thread too
    assert not parents.is_alive() and not childs.is_alive()
    assert_no_renewal_failed(caplog)
