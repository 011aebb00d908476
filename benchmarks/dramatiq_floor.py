"""Micro-benchmark: the CPU one delivered message costs a Dramatiq worker process.

Not a test: it measures, it does not assert. It answers "how much of a
finisher delivery's cost is Dramatiq's own, and how much the gate adds", on
the Redis at ``REDIS_URL``, through a real ``dramatiq.Worker`` (consumer,
worker threads, fetch and ack), one process. Per case it sends ``--n``
messages, starts the worker, waits for the queue to drain and reports the
process CPU time per message and the messages per second:

- ``bare``: a ``RedisBroker`` with no middleware, an actor that does nothing;
- ``covworker broker``: the app's broker (Dramatiq's default middleware,
  argument validation, the gate), the same do-nothing actor (not gated);
- ``finisher, coalesced``: ``upload_finisher`` messages of a commit whose
  gate is full with a deferred copy pending, so the gate acks every one
  without running it (the burst's rejected delivery).

    REDIS_URL=redis://127.0.0.1:6379/0 \\
    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/covworker \\
        python benchmarks/dramatiq_floor.py [--n 3000] [--threads 1 8]

``DATABASE_URL`` is only parsed (no connection is made). Keys live under a
namespace of their own and are deleted afterwards.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import dramatiq
from dramatiq.brokers.redis import RedisBroker

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.runtime.worker import CovworkerApp, build_app
from app.settings import Settings

#: How often the driver looks at the queue while it drains, ms.
JOIN_INTERVAL_MS = 50


def drain(
    broker: RedisBroker, queue: str, send: Callable[[], object], n: int, threads: int
) -> tuple[float, float]:
    """Send ``n`` messages, then run a worker until the queue drains: (CPU s, wall s)."""
    for _ in range(n):
        send()
    worker = dramatiq.Worker(broker, worker_threads=threads, worker_timeout=50)
    cpu, wall = time.process_time(), time.perf_counter()
    worker.start()
    broker.join(queue, interval=JOIN_INTERVAL_MS)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    worker.stop()
    return cpu, wall


def bare_noop(settings: Settings, n: int, threads: int) -> tuple[float, float]:
    with fresh_app(settings) as app:
        bare = RedisBroker(
            client=app.services.redis, namespace=f"{settings.namespace}-bare", middleware=[]
        )
        noop = dramatiq.actor(broker=bare, queue_name="q")(do_nothing)
        return drain(bare, "q", noop.send, n, threads)


def app_noop(settings: Settings, n: int, threads: int) -> tuple[float, float]:
    with fresh_app(settings) as app:
        assert isinstance(app.broker, RedisBroker), "Dramatiq's floor is measured on Redis"
        noop = dramatiq.actor(broker=app.broker, queue_name="noop")(do_nothing)
        return drain(app.broker, "noop", noop.send, n, threads)


def coalesced(settings: Settings, n: int, threads: int) -> tuple[float, float]:
    with fresh_app(settings) as app:
        limit = settings.finisher_concurrency
        key = app.gate.backend_key("1:1")
        for holder in range(limit + 1):  # the gate full, then one deferral pending
            app.gate.backend.acquire(
                key,
                f"holder-{holder}",
                limit=limit,
                lease_ms=600_000,
                message_id=f"m{holder}",
                skip_if_pending=True,
            )
        from app import actors  # declared on ``app``

        send = functools.partial(actors.upload_finisher.send, 1, 1)
        assert isinstance(app.broker, RedisBroker), "Dramatiq's floor is measured on Redis"
        return drain(app.broker, actors.upload_finisher.queue_name, send, n, threads)


def do_nothing() -> None:
    pass


@contextlib.contextmanager
def fresh_app(settings: Settings) -> Iterator[CovworkerApp]:
    """The real app on its own namespace; its keys are deleted afterwards."""
    app = build_app(settings)
    try:
        yield app
    finally:
        client = app.services.redis  # its keys, the gate's and Dramatiq's share the prefix
        for stale in client.scan_iter(match=f"{settings.namespace}*", count=1000):
            client.delete(stale)
        app.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=3000, help="messages per case")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 8])
    args = parser.parse_args()
    namespace = f"floor-{os.getpid()}"
    settings = Settings(namespace=namespace)
    rows = []
    for threads in args.threads:
        rows.append(("bare", threads, *bare_noop(settings, args.n, threads)))
        rows.append(("covworker broker", threads, *app_noop(settings, args.n, threads)))
        rows.append(("finisher, coalesced", threads, *coalesced(settings, args.n, threads)))
    print(f"| case | threads | CPU per message | messages/s |  ({args.n} messages, one process)")
    print("|---|---:|---:|---:|")
    for name, threads, cpu, wall in rows:
        print(f"| {name} | {threads} | {1000 * cpu / args.n:.3f} ms | {args.n / wall:,.0f} |")


if __name__ == "__main__":
    main()
