"""The collector is off while any merge pass or parse holds it paused, and back
as it was once the last one leaves, whichever thread leaves last; holders that
keep it paused past ``COLLECT_EVERY_S`` collect once then."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import pytest

from app.runtime import gc_pause
from app.runtime.gc_pause import gc_paused
from tests.support.threads import all_at_once


@pytest.fixture(autouse=True)
def collector_restored() -> Iterator[None]:
    was = gc.isenabled()
    yield
    gc.enable() if was else gc.disable()


def test_the_collector_is_off_inside_and_on_again_after() -> None:
    gc.enable()
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off() -> None:
    gc.disable()
    with gc_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_an_exception_inside_still_turns_the_collector_back_on() -> None:
    gc.enable()
    with pytest.raises(RuntimeError), gc_paused():
        raise RuntimeError("the pass failed")
    assert gc.isenabled()


def test_overlapping_passes_in_threads_keep_it_off_until_the_last_one_leaves() -> None:
    gc.enable()
    threads = 8
    inside = threading.Barrier(threads)
    first_out = threading.Event()
    seen_after_first: list[bool] = []

    def one_pass(index: int) -> None:
        with gc_paused():
            inside.wait(timeout=10)  # all of them inside at once
            if index == 0:
                return  # leaves first, the others still inside
            assert first_out.wait(timeout=10)
            seen_after_first.append(gc.isenabled())

    def first_leaves() -> None:
        one_pass(0)
        first_out.set()

    all_at_once([first_leaves, *(lambda i=i: one_pass(i) for i in range(1, threads))])

    assert seen_after_first == [False] * (threads - 1)
    assert gc.isenabled()


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> tuple[list[float], list[int]]:
    """The pause's clock, moved by hand, and the full collections it starts, counted."""
    now = [1000.0]
    monkeypatch.setattr(gc_pause.time, "monotonic", lambda: now[0])
    collections: list[int] = []
    monkeypatch.setattr(gc_pause.gc, "collect", lambda *a: collections.append(1) or 0)
    return now, collections


def test_holders_that_keep_it_paused_past_the_bound_collect_once_then(
    clock: tuple[list[float], list[int]],
) -> None:
    now, collections = clock
    gc.enable()
    with gc_paused():  # a long backlog: one holder always inside
        now[0] += gc_pause.COLLECT_EVERY_S - 1
        with gc_paused():
            pass
        assert collections == []  # within the bound: no collection
        now[0] += 2
        with gc_paused():
            assert not gc.isenabled()
        assert collections == [1]  # past it: one, by the thread that entered
        with gc_paused():
            pass
        assert collections == [1]  # and the bound starts again
    assert gc.isenabled()


def test_a_process_that_had_it_off_never_collects_for_the_bound(
    clock: tuple[list[float], list[int]],
) -> None:
    now, collections = clock
    gc.disable()
    with gc_paused():
        now[0] += gc_pause.COLLECT_EVERY_S * 2
        with gc_paused():
            pass
    assert collections == []
    assert not gc.isenabled()
