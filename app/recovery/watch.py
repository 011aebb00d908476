"""Every worker process watches for Redis losing its data, and heals at once.

After a FLUSHALL or a Redis restart without persistence, the queues, the
processing sets and the intermediates are gone: no message is left that
would move an upload in flight, and the workers sit idle. The age-based
sweep would find those uploads only after ``sweep_after_s``. Instead, each
worker process checks the epoch marker (``ProcessingState.epoch_key``)
every ``redis_loss_check_s``; the first to find it missing re-drives
everything in flight through a sweep with no age (``sweeper.detect_redis_loss``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

import dramatiq
from dramatiq.middleware import Middleware

logger = logging.getLogger(__name__)


class RedisLossWatch(Middleware):
    """A daemon thread per worker process that calls ``check`` every ``interval_s``.

    ``check`` does the looking (one Redis EXISTS when nothing is wrong); an
    exception it raises (Redis down while it restarts) is logged and the
    next round tries again.
    """

    def __init__(self, *, check: Callable[[], object], interval_s: float) -> None:
        self.check = check
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def after_worker_boot(self, broker: dramatiq.Broker, worker: Any) -> None:
        self._stop.clear()
        self._thread = threading.Thread(
            target=self._run, name="covworker-redis-loss-watch", daemon=True
        )
        self._thread.start()

    def before_worker_shutdown(self, broker: dramatiq.Broker, worker: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.interval_s + 30)
            self._thread = None

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.check()
            except Exception:
                logger.warning("Could not check Redis for data loss; trying again.", exc_info=True)
            self._stop.wait(self.interval_s)
