"""Messages RabbitMQ's consumers hold, counted by the workers themselves.

AMQP does not tell a client how many messages a queue's consumers hold
(delivered, not yet acknowledged): a passive ``queue.declare`` counts only
those no consumer holds. Dramatiq's RabbitMQ consumer keeps the delivery
tags it holds (to acknowledge them), so each worker process writes, every
``REPORT_INTERVAL_S``, how many each of its consumers holds to a Redis key
of its own (``held_messages_key``) that expires after ``REPORT_TTL_S``: a
worker that dies stops being counted within that time. The operations page
sums the reports (``reported_held``).

Every worker process reports, on either broker, so the live reports are
also the count of worker processes (``reported_workers``): Dramatiq's Redis
broker records a heartbeat for every process that talks to it, the
``covworker serve`` processes and the CLI that enqueue included, and keeps
a dead one's until its heartbeat times out.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
from collections.abc import Sequence
from typing import Any

import dramatiq
from dramatiq.common import dq_name
from dramatiq.middleware import Middleware

from app.runtime.state import held_messages_key, held_messages_pattern

logger = logging.getLogger(__name__)

#: How often a worker reports what its consumers hold (s), and how long a report lives.
REPORT_INTERVAL_S = 2.0
REPORT_TTL_S = 3 * REPORT_INTERVAL_S


def held_by(worker: dramatiq.Worker) -> dict[str, int]:
    """Messages each consumer of ``worker`` holds, by queue (``<queue>.DQ``:
    delayed messages held until they are due)."""
    found: dict[str, int] = {}
    for queue, thread in list(worker.consumers.items()):
        tags = getattr(getattr(thread, "consumer", None), "known_tags", None)
        if tags is not None:
            found[queue] = len(tags)
    return found


class HeldMessagesReport(Middleware):
    """A daemon thread per worker process writing ``held_by`` to Redis."""

    def __init__(self, client: Any, namespace: str, interval_s: float = REPORT_INTERVAL_S) -> None:
        self.client, self.namespace, self.interval_s = client, namespace, interval_s
        self.key = held_messages_key(namespace, f"{socket.gethostname()}:{os.getpid()}")
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def after_worker_boot(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        self._stop.clear()
        self._thread = threading.Thread(
            target=self._run, args=(worker,), name="covworker-held-messages", daemon=True
        )
        self._thread.start()

    def before_worker_shutdown(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.interval_s + 5)
            self._thread = None
        try:
            self.client.delete(self.key)
        except Exception:  # the report expires anyway
            logger.debug("Could not delete %s.", self.key, exc_info=True)

    def _run(self, worker: dramatiq.Worker) -> None:
        ttl_s = max(1, int(self.interval_s * 3))
        while not self._stop.is_set():
            try:
                self.client.set(self.key, json.dumps(held_by(worker)), ex=ttl_s)
            except Exception:
                logger.warning("Could not report the messages this worker holds.", exc_info=True)
            self._stop.wait(self.interval_s)


def reported_workers(client: Any, namespace: str) -> int:
    """Worker processes alive now: those whose report has not expired."""
    return sum(1 for _ in client.scan_iter(match=held_messages_pattern(namespace), count=500))


def reported_held(client: Any, namespace: str, queues: Sequence[str]) -> tuple[int, int] | None:
    """(in flight, delayed) messages of ``queues`` the reporting workers hold;
    None if no worker reports."""
    keys = list(client.scan_iter(match=held_messages_pattern(namespace), count=500))
    if not keys:
        return None
    in_flight = delayed = 0
    with client.pipeline(transaction=False) as pipe:
        for key in keys:
            pipe.get(key)
        reports = pipe.execute()
    for raw in reports:
        try:
            held = json.loads(raw) if raw else {}
        except ValueError:
            continue
        in_flight += sum(int(held.get(queue, 0)) for queue in queues)
        delayed += sum(int(held.get(dq_name(queue), 0)) for queue in queues)
    return in_flight, delayed
