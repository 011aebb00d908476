"""Waiting on a background thread's rounds instead of sleeping.

covworker's per-process threads (health beats, held-message reports, the
Redis-loss watch) loop ``do the work; self._stop.wait(interval)``. A test
swaps that stop event for a ``CountedStop`` and waits for a number of rounds
to have passed: each round has then done its work.
"""

from __future__ import annotations

import threading

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
