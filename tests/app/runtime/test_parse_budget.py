"""The per-process parse budget (``app.runtime.parse_budget``), with real threads."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from app.runtime.parse_budget import ParseBudget

pytestmark = pytest.mark.timeout(60)


def wait_until(condition: object, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached")
        time.sleep(0.001)


def test_many_threads_never_parse_more_than_the_budget_at_once() -> None:
    budget = ParseBudget(100)
    lock = threading.Lock()
    now = {"bytes": 0, "holders": 0}
    seen = {"bytes": 0, "holders": 0}
    sizes = [10, 30, 60, 90, 5, 45, 20, 70] * 25

    def parse(size: int) -> None:
        with budget.hold(size):
            with lock:
                now["bytes"] += size
                now["holders"] += 1
                seen["bytes"] = max(seen["bytes"], now["bytes"])
                seen["holders"] = max(seen["holders"], now["holders"])
            sum(range(20_000))  # the work
            with lock:
                now["bytes"] -= size
                now["holders"] -= 1

    with ThreadPoolExecutor(16) as pool:
        for done in [pool.submit(parse, size) for size in sizes]:
            done.result()  # a thread that raised fails the test
    assert seen["bytes"] <= 100


@pytest.mark.parametrize("capacity", [0, 1000])
def test_no_more_uploads_than_the_parses_at_once_are_parsed_together_whatever_their_size(
    capacity: int,
) -> None:
    budget = ParseBudget(capacity, parses=2)
    lock = threading.Lock()
    now, seen = [0], [0]
    two_inside = threading.Barrier(2, timeout=10)  # the first two parse at once

    def parse(n: int) -> None:
        with budget.hold(1), budget.parsing():
            with lock:
                now[0] += 1
                seen[0] = max(seen[0], now[0])
            if n < 2:
                two_inside.wait()
            time.sleep(0.002)  # the work, long enough for the others to pile up
            with lock:
                now[0] -= 1

    with ThreadPoolExecutor(8) as pool:
        for done in [pool.submit(parse, n) for n in range(40)]:
            done.result()
    assert seen[0] == 2
    assert budget.in_use == 0 and budget._holders == 0 and budget._parsing == 0


def test_reading_and_storing_around_a_parse_are_not_held_to_the_parses_at_once() -> None:
    budget = ParseBudget(1000, parses=1)
    all_inside = threading.Barrier(6, timeout=10)  # broken unless all six hold at once

    def upload() -> None:
        with budget.hold(10):
            all_inside.wait()  # reading the payload: all at once
            with budget.parsing():
                assert budget._parsing == 1
            all_inside.wait()  # storing the result: all at once again

    with ThreadPoolExecutor(6) as pool:
        for done in [pool.submit(upload) for _ in range(6)]:
            done.result()  # BrokenBarrierError if a hold waited for another's parse
    assert budget.in_use == 0 and budget._parsing == 0


def test_uploads_that_fit_together_are_parsed_side_by_side() -> None:
    budget = ParseBudget(100)
    both_inside = threading.Barrier(2, timeout=10)  # broken unless both hold at once

    def parse(size: int) -> None:
        with budget.hold(size):
            both_inside.wait()

    with ThreadPoolExecutor(2) as pool:
        for done in [pool.submit(parse, 10), pool.submit(parse, 30)]:
            done.result()  # BrokenBarrierError if the second waited for the first
    assert budget.in_use == 0
    assert budget.in_use == 0


def test_an_upload_larger_than_the_budget_is_parsed_alone() -> None:
    budget = ParseBudget(100)
    release = threading.Event()
    inside: list[str] = []

    def big() -> None:
        with budget.hold(500):
            inside.append("big")
            assert release.wait(10)

    def small() -> None:
        with budget.hold(1):
            inside.append("small")

    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(big)
        wait_until(lambda: inside == ["big"])
        assert budget.in_use == 100  # the whole budget, not more
        second = pool.submit(small)
        wait_until(lambda: len(budget._bytes.waiting) == 1)
        assert inside == ["big"]
        release.set()
        first.result()
        second.result()
    assert inside == ["big", "small"] and budget.in_use == 0


def test_waiting_uploads_are_served_in_arrival_order() -> None:
    budget = ParseBudget(10)
    release = threading.Event()
    order: list[str] = []

    def hold(name: str, size: int, wait: bool = False) -> None:
        with budget.hold(size):
            order.append(name)
            if wait:
                assert release.wait(10)

    with ThreadPoolExecutor(3) as pool:
        first = pool.submit(hold, "first", 10, True)
        wait_until(lambda: order == ["first"])
        big = pool.submit(hold, "big", 10)
        wait_until(lambda: len(budget._bytes.waiting) == 1)
        small = pool.submit(hold, "small", 1)  # would fit beside "big", not before it
        wait_until(lambda: len(budget._bytes.waiting) == 2)
        release.set()
        for done in (first, big, small):
            done.result()
    assert order == ["first", "big", "small"]


def test_a_budget_of_zero_does_not_limit() -> None:
    budget = ParseBudget(0)
    with budget.hold(10**12), budget.hold(10**12):
        assert budget.in_use == 0


def test_a_negative_budget_is_refused() -> None:
    with pytest.raises(ValueError, match="cannot be negative"):
        ParseBudget(-1)
    with pytest.raises(ValueError, match="cannot be negative"):
        ParseBudget(10, parses=-1)


@pytest.mark.parametrize("line", ["bytes", "parse"])
def test_the_shared_queues_uploads_wait_ahead_of_the_bulk_queues_in_their_own_order(
    line: str,
) -> None:
    # In the bytes' line (each upload takes the whole budget), and in the
    # parse line (one parse at once), the order the hold was taken in.
    budget = ParseBudget(10) if line == "bytes" else ParseBudget(0, parses=1)
    waiting_line = budget._bytes if line == "bytes" else budget._parse
    release = threading.Event()
    order: list[str] = []

    def hold(name: str, first: bool = False, wait: bool = False) -> None:
        with budget.hold(10, first=first), budget.parsing():
            order.append(name)
            if wait:
                assert release.wait(10)

    with ThreadPoolExecutor(5) as pool:
        running = pool.submit(hold, "running", False, True)
        wait_until(lambda: order == ["running"])
        waiting = []
        for name, first in (
            ("bulk 1", False),
            ("bulk 2", False),
            ("shared 1", True),
            ("shared 2", True),
        ):
            waiting.append(pool.submit(hold, name, first))
            queued = len(waiting)
            wait_until(lambda: len(waiting_line.waiting) == queued)  # noqa: B023 (awaited here)
        release.set()
        for done in (running, *waiting):
            done.result()
    assert order == ["running", "shared 1", "shared 2", "bulk 1", "bulk 2"]
    assert budget.in_use == 0 and waiting_line.first == 0 and budget._parsing == 0
