"""Threads in tests: waiting on a background thread's rounds instead of
sleeping, and racing calls against each other.

covworker's per-process threads (health beats, held-message reports, the
Redis-loss watch) loop ``do the work; self._stop.wait(interval)``. A test
swaps that stop event for a ``CountedStop`` and waits for a number of rounds
to have passed: each round has then done its work.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TypeVar, cast

T = TypeVar("T")

#: How long a test waits for a round before it gives up (s).
ROUND_TIMEOUT_S = 10.0


class CountedStop(threading.Event):
    """A stop event that counts the rounds a loop waits on it."""

    def __init__(self) -> None:
        super().__init__()
        self.rounds = 0
        self.changed = threading.Condition()

    def wait(self, timeout: float | None = None) -> bool:
        with self.changed:
            self.rounds += 1
            self.changed.notify_all()
        return super().wait(timeout)

    def wait_rounds(self, n: int) -> bool:
        """True once ``n`` more rounds have ended (False after ``ROUND_TIMEOUT_S``)."""
        with self.changed:
            target = self.rounds + n
            return self.changed.wait_for(lambda: self.rounds >= target, ROUND_TIMEOUT_S)


def all_at_once(calls: Sequence[Callable[[], T]]) -> list[T]:
    """Run each call in a thread of its own, released together by a barrier
    so that they race; their results in the order of ``calls``, once all are
    done. A call that raised raises here (the first of them), after the
    others have ended."""
    barrier = threading.Barrier(len(calls))
    results: list[T | None] = [None] * len(calls)
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            barrier.wait()
            results[i] = calls[i]()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return cast(list[T], results)
