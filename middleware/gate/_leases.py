"""Leases of running messages, and the heartbeat that renews them.

A slot of a key is a lease in the backend, scored by its expiry in the
backend's clock. While its message runs, this process renews it every third
of the lease; a holder killed with SIGKILL stops renewing, and its slot is
purged by the next acquire after its own lease ran out, however busy the key.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dramatiq.broker import MessageProxy
from dramatiq.logging import get_logger

from middleware.gate._metrics import GateMetrics, Reporting
from middleware.gate.backends import GateBackend


@dataclass(eq=False)
class Holding:
    """One slot this process holds: for which delivery, on which key, with which lease."""

    message: MessageProxy
    key: str
    backend_key: str
    token: str
    lease_ms: int
    renewed_at: float = field(default=0.0)
    lost: bool = False


class Heartbeat:
    """Renews this process's holdings, a third of a lease after the last renewal.

    One daemon thread, started by the first holding (also after a fork), sleeps
    until the next renewal is due or a new holding arrives. A holding survives
    two missed renewals before its lease runs out.
    """

    def __init__(
        self,
        backend: GateBackend,
        *,
        on_lost: Callable[[Holding], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.logger = get_logger(__name__, type(self))
        self.backend = backend
        self.on_lost = on_lost
        self.clock = clock
        self._holdings: set[Holding] = set()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopped = False
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()
        self._next_due = 0.0

    def add(self, holding: Holding) -> None:
        holding.renewed_at = self.clock()
        due = holding.renewed_at + holding.lease_ms / 3000
        with self._lock:
            self._holdings.add(holding)
            alive = self._thread is not None and self._thread.is_alive()
            started = not alive or self._pid != os.getpid()
            if started:
                self._pid, self._stopped = os.getpid(), False
                self._thread = threading.Thread(
                    target=self._run, name="gate-heartbeat", daemon=True
                )
                self._thread.start()
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

    def _run(self) -> None:
        while not self._stopped:
            self._wake.clear()
            with self._lock:
                self._next_due = float("inf")
            try:
                pause = self.renew_due()
            except Exception:  # never die: the holders would lose their leases
                self.logger.warning("Renewing gate leases failed; retrying.", exc_info=True)
                pause = 0.5
            pause = max(pause, 0.02)
            with self._lock:
                self._next_due = self.clock() + pause
            self._wake.wait(pause)

    def renew_due(self) -> float:
        """Renew every holding due for renewal; return the seconds until the next is due."""
        now = self.clock()
        with self._lock:
            holdings = [h for h in self._holdings if not h.lost]
        failed = False
        due_by_key: dict[str, list[Holding]] = defaultdict(list)
        for holding in holdings:  # what is due within one tick too, rather than wake again
            if now - holding.renewed_at >= holding.lease_ms / 3000 - 0.02:
                due_by_key[holding.backend_key].append(holding)
        for backend_key, due in due_by_key.items():
            try:
                lost = set(self.backend.renew(backend_key, [(h.token, h.lease_ms) for h in due]))
            except Exception as exc:
                self.logger.warning(
                    "Could not renew %d lease(s) on key %r: %s", len(due), backend_key, exc
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
            live = [h for h in self._holdings if not h.lost]
        if not live:
            return 3600.0
        pause = min(h.renewed_at + h.lease_ms / 3000 for h in live) - self.clock()
        return max(pause, 0.25) if failed else pause


class Leases:
    """The slots this process holds, by delivery, and the one heartbeat renewing them.

    Every Worker on a broker shares its gate, and so these leases: the
    heartbeat stops when the last Worker of the process shuts down, never
    while another Worker's messages still run.
    """

    def __init__(
        self,
        backend: GateBackend,
        *,
        logger: logging.Logger | logging.LoggerAdapter[Any],
        metrics: GateMetrics,
        reporting: Reporting,
    ) -> None:
        self.backend = backend
        self.logger = logger
        self.metrics = metrics
        self.reporting = reporting
        self.heartbeat = Heartbeat(backend, on_lost=self._lost)
        self._held: dict[int, Holding] = {}  # by the identity of the delivery
        self._workers = 0  # Workers booted and not shut down yet
        self._lock = threading.Lock()

    def worker_booted(self) -> None:
        with self._lock:
            self._workers += 1

    def worker_stopped(self) -> None:
        """A Worker shut down: stop renewing once it was the last one."""
        with self._lock:
            self._workers = max(0, self._workers - 1)
            last = self._workers == 0
        if last:
            self.heartbeat.stop()

    def hold(self, holding: Holding) -> None:
        """Record a slot just taken for ``holding.message``, and renew it from now on."""
        with self._lock:
            self._held[id(holding.message)] = holding
        self.heartbeat.add(holding)
        with self.reporting:
            self.metrics.count("acquired", holding.message)
            self.metrics.holders(holding.message, +1)

    def release(self, message: MessageProxy) -> None:
        """Give back the slot taken for this very delivery, and nothing else.

        Dramatiq calls every middleware's after-hooks, also for a message
        another middleware skipped before the gate saw it: such a message has
        no entry here, so nobody else's slot is released.
        """
        with self._lock:
            holding = self._held.get(id(message))
            if holding is None or holding.message is not message:
                return
            del self._held[id(message)]
        self.heartbeat.forget(holding)
        with self.reporting:
            self.metrics.holders(message, -1)
        try:
            removed = self.backend.release(holding.backend_key, holding.token)
        except Exception as exc:
            with self.reporting:
                self.logger.warning(
                    "Could not release the slot on key %r (%s); its lease frees it in %d ms.",
                    holding.key,
                    exc,
                    holding.lease_ms,
                )
            return
        with self.reporting:
            self.metrics.count("released", message)
        if not removed and not holding.lost:
            self._lost(holding)

    def _lost(self, holding: Holding) -> None:
        with self.reporting:
            self.metrics.count("leases_lost", holding.message)
            self.logger.warning(
                "Lease of message %s on key %r expired while it ran: renewals did not reach "
                "the backend.",
                holding.message.message_id,
                holding.key,
            )
