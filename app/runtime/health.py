"""Liveness for container healthchecks: beat files a check can read.

A worker process (``dramatiq app.actors``) with ``COVWORKER_HEALTH_DIR`` set
runs a small thread that, every ``BEAT_INTERVAL_S``, looks at Dramatiq's own
consumer and worker threads and touches ``worker-<pid>.beat`` only while all
of them are alive: a process whose consumers died (or that hangs) stops
beating. The sweeper touches ``sweeper.beat`` after each sweep.
``covworker health worker|sweeper`` reads them; exit 0 means alive.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path

import dramatiq
from dramatiq.middleware import Middleware

logger = logging.getLogger(__name__)

#: Seconds between two beats of a healthy worker process.
BEAT_INTERVAL_S = 5.0
#: A worker beat older than this (seconds) means the process is not alive.
WORKER_MAX_AGE_S = 30.0
SWEEPER_BEAT = "sweeper.beat"


def touch(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{time.time():.3f}\n")


class HealthBeat(Middleware):
    """Touch this process's beat file while Dramatiq's threads are all alive."""

    def __init__(self, directory: Path, interval_s: float = BEAT_INTERVAL_S) -> None:
        self.directory = directory
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def after_worker_boot(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        path = self.directory / f"worker-{os.getpid()}.beat"
        self._thread = threading.Thread(
            target=self._beat, args=(worker, path), name="covworker-health", daemon=True
        )
        self._thread.start()

    def before_worker_shutdown(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        self._stop.set()

    def _beat(self, worker: dramatiq.Worker, path: Path) -> None:
        while not self._stop.is_set():
            threads = [*worker.consumers.values(), *worker.workers]
            if threads and all(t.is_alive() for t in threads):
                try:
                    touch(path)
                except OSError as exc:  # a full disk must not kill the worker
                    logger.warning("Cannot write the health beat %s: %s", path, exc)
            self._stop.wait(self.interval_s)
        path.unlink(missing_ok=True)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def check_workers(directory: Path, max_age_s: float = WORKER_MAX_AGE_S) -> tuple[bool, str]:
    """Every live worker process beat within ``max_age_s``, and there is one."""
    now = time.time()
    fresh: list[str] = []
    stale: list[str] = []
    for path in sorted(directory.glob("worker-*.beat")):
        pid = int(path.stem.removeprefix("worker-"))
        if not _pid_alive(pid):
            continue  # a process that is gone (restarted container, old run)
        age = now - path.stat().st_mtime
        (fresh if age <= max_age_s else stale).append(f"{pid} ({age:.0f} s)")
    if stale:
        return False, f"worker process(es) silent too long: {', '.join(stale)}"
    if not fresh:
        return False, f"no live worker process has beaten in {directory}"
    return True, f"{len(fresh)} worker process(es) alive"


def check_sweeper(directory: Path, max_age_s: float) -> tuple[bool, str]:
    path = directory / SWEEPER_BEAT
    if not path.exists():
        return False, f"the sweeper has not completed a sweep yet ({path} missing)"
    age = time.time() - path.stat().st_mtime
    if age > max_age_s:
        return False, f"the last sweep was {age:.0f} s ago (more than {max_age_s:g} s)"
    return True, f"last sweep {age:.0f} s ago"
