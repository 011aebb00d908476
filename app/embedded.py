"""The embedded default: the whole pipeline in one process, no servers.

fakeredis (with Lua, so Dramatiq's broker scripts, redis-py's lock and the
gate's script really run) stands in for Redis, SQLite for PostgreSQL, and a
Dramatiq ``Worker`` runs in threads of this process. The code paths are the
production ones; only the servers are swapped.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import fakeredis
from dramatiq import Worker

from app.db.migrate import upgrade
from app.errors import ConfigurationError
from app.recovery.sweeper import detect_redis_loss
from app.runtime.worker import CovworkerApp, build_app, join_queues
from app.settings import Settings

logger = logging.getLogger(__name__)

#: Worker threads of the embedded worker (a CI matrix stampede needs several).
EMBEDDED_THREADS = 8
#: Idle poll ceiling of the embedded consumer, ms: small, the queue is local.
EMBEDDED_POLL_MS = 20
#: How long an embedded run may take to settle, ms.
SETTLE_TIMEOUT_MS = 600_000


@dataclass
class EmbeddedRuntime:
    app: CovworkerApp
    worker: Worker

    def wait_settled(self, timeout_ms: int = SETTLE_TIMEOUT_MS) -> None:
        """Wait until both queues (including delayed messages) are empty."""
        join_queues(self.app.broker, self.app.settings.queue_names, timeout_ms=timeout_ms)
        self.worker.join()


@contextmanager
def embedded(
    *, database_path: Path | None = None, threads: int = EMBEDDED_THREADS, **overrides: Any
) -> Iterator[EmbeddedRuntime]:
    """An in-process worker on fakeredis + SQLite, stopped on exit."""
    with tempfile.TemporaryDirectory(prefix="covworker-") as tmp:
        path = database_path or Path(tmp) / "covworker.db"
        settings = Settings(
            redis_url="redis://embedded", database_url=f"sqlite:///{path}", **overrides
        )
        if settings.metrics:
            # Dramatiq's Prometheus middleware sets itself up in the worker
            # processes `dramatiq` forks, and serves from a process of its own.
            raise ConfigurationError(
                "COVWORKER_METRICS=true needs worker processes (`dramatiq app.actors`), "
                "which serve the metrics; the embedded run has none: unset it"
            )
        upgrade(settings.database_url)
        client = fakeredis.FakeRedis(server=fakeredis.FakeServer())
        app = build_app(settings, redis_client=client, gate_metrics=True)  # the demo shows them
        _start_on_a_new_redis(app)
        worker = Worker(app.broker, worker_threads=threads, worker_timeout=EMBEDDED_POLL_MS)
        worker.start()
        try:
            yield EmbeddedRuntime(app, worker)
        finally:
            worker.stop()
            app.close()


def _start_on_a_new_redis(app: CovworkerApp) -> None:
    """The in-memory Redis is new on every start, while the SQLite file may
    be a previous run's: that is how the embedded run works, not Redis
    losing its data. Set the epoch marker before the worker looks for it
    (so nothing warns), and re-drive what the last run left in flight."""
    detect_redis_loss(app.services)
    from app import actors  # declared on ``app``, the app built last (its import builds none)

    redriven = actors.sweep_uploads(older_than_s=0)
    logger.info(
        "embedded: Redis is an in-memory fakeredis, new on every start; re-drove %d upload(s) "
        "a previous run left in flight.",
        len(redriven.reprocessed) + len(redriven.refinished),
    )
