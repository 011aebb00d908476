"""Renew the leases of this process's gate holders while their actors run.

A lease must be short, so that a holder killed with SIGKILL frees its slot
soon; an actor may run for minutes. One daemon thread per gate renews every
live holder once a third of its lease has passed since the last renewal, so
a holder survives two missed renewals before its lease runs out. The
thread starts on the first holder (also after a fork) and sleeps until the
next renewal is due or a new holder arrives.
"""

from __future__ import annotations

import os
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dramatiq.logging import get_logger

from middleware.gate_leases import GateLeases

#: The smallest pause of the renewal thread, in seconds.
MIN_TICK_SECONDS = 0.02

#: The pause before trying again after Redis refused a renewal, in seconds.
RETRY_SECONDS = 0.25


@dataclass(eq=False)
class Holding:
    """One slot this process holds: which message, key and token, and its lease."""

    message: Any
    actor_name: str
    key: str
    redis_key: str
    token: str
    lease_ms: int
    renewed_at: float = field(default=0.0)
    lost: bool = False


class LeaseHeartbeat:
    """Renews registered holdings from a background thread."""

    def __init__(
        self,
        leases: GateLeases,
        *,
        on_lost: Callable[[Holding], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.logger = get_logger(__name__, type(self))
        self.leases = leases
        self.on_lost = on_lost
        self.clock = clock
        self.renewals = 0
        self._holdings: set[Holding] = set()
        self._lock = threading.Condition()
        self._wake = threading.Event()
        self._stopped = False
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()
        self._next_due = 0.0  # when the thread wakes up next (clock seconds)

    def add(self, holding: Holding) -> None:
        holding.renewed_at = self.clock()
        due = holding.renewed_at + holding.lease_ms / 3000
        with self._lock:
            self._holdings.add(holding)
            started = self._ensure_thread()
            wake = started or due < self._next_due
        if wake:  # only if the thread would sleep past this holding's renewal
            self._wake.set()

    def forget(self, holding: Holding) -> None:
        with self._lock:
            self._holdings.discard(holding)

    def stop(self) -> None:
        self._stopped = True
        self._wake.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def _ensure_thread(self) -> bool:
        alive = self._thread is not None and self._thread.is_alive()
        if alive and self._pid == os.getpid():
            return False
        self._pid = os.getpid()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="gate-heartbeat", daemon=True)
        self._thread.start()
        return True

    def _run(self) -> None:
        while not self._stopped:
            self._wake.clear()
            with self._lock:  # while renewing, any new holding wakes the thread again
                self._next_due = float("inf")
            try:
                pause = self.renew_due()
            except Exception:  # never let the thread die: holders would lose their leases
                self.logger.warning("Renewing gate leases failed; retrying.", exc_info=True)
                pause = 0.5
            pause = max(pause, MIN_TICK_SECONDS)
            with self._lock:
                self._next_due = self.clock() + pause
            self._wake.wait(pause)

    def renew_due(self) -> float:
        """Renew every holding due for renewal; return the seconds until the next is due."""
        now = self.clock()
        with self._lock:
            holdings = [h for h in self._holdings if not h.lost]
        failed = False
        by_key: dict[str, list[Holding]] = defaultdict(list)
        for holding in holdings:
            # Renew what is due within one tick too, rather than wake up again for it.
            if now - holding.renewed_at >= holding.lease_ms / 3000 - MIN_TICK_SECONDS:
                by_key[holding.redis_key].append(holding)
        for redis_key, due in by_key.items():
            try:
                lost = set(self.leases.renew(redis_key, [(h.token, h.lease_ms) for h in due]))
            except Exception as exc:
                self.logger.warning(
                    "Could not renew %d lease(s) on key %r: %s", len(due), redis_key, exc
                )
                failed = True
                continue
            for holding in due:
                if holding.token not in lost:
                    holding.renewed_at = now
                    continue
                with self._lock:  # released meanwhile: not lost, just gone
                    registered = holding in self._holdings
                if registered:
                    holding.lost = True
                    self.on_lost(holding)
            with self._lock:
                self.renewals += len(due)
                self._lock.notify_all()
        with self._lock:
            live = [h for h in self._holdings if not h.lost]
        if not live:
            return 3600.0
        pause = min(h.renewed_at + h.lease_ms / 3000 for h in live) - self.clock()
        return max(pause, RETRY_SECONDS) if failed else pause

    def wait_renewed(self, count: int, timeout: float) -> bool:
        """Block until ``count`` renewals in all have been made (tests, diagnostics)."""
        with self._lock:
            return self._lock.wait_for(lambda: self.renewals >= count, timeout)
