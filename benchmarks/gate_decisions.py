"""Micro-benchmark: what one decision of the per-key gate costs, on local Redis.

Not a test: it measures, it does not assert. It drives the middleware's own
hooks (``before_process_message`` is the decision, ``after_process_message``
the release) on a stub broker, against the Redis at ``--redis-url``, and
prints, per scenario, the p50 and p99 of one decision and the decisions
per second of one process. Side by side, in the same run and on the same
Redis: Dramatiq's ``ConcurrentRateLimiter`` acquire and release, and a bare
``PING`` round trip as the floor.

    python benchmarks/gate_decisions.py [--n 5000] [--threads 4] \
        [--write benchmarks/RESULTS-gate.md]
"""

from __future__ import annotations

import argparse
import contextlib
import platform
import statistics
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import dramatiq
import redis
from dramatiq.broker import MessageProxy
from dramatiq.brokers.stub import StubBroker
from dramatiq.common import dq_name
from dramatiq.middleware import SkipMessage
from dramatiq.rate_limits import ConcurrentRateLimiter
from dramatiq.rate_limits.backends import RedisBackend

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from middleware import PerKeyConcurrency
from middleware import RedisBackend as GateRedisBackend

KEYS = 100


def percentile(samples: list[float], p: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))]


def timed_admission(
    gate: PerKeyConcurrency, broker: dramatiq.Broker, actor: dramatiq.Actor, key: int
) -> float:
    """Seconds the gate takes to admit a message of ``actor`` for ``key`` (its
    slot is released after, off the clock)."""
    message = MessageProxy(actor.message(key))
    start = time.perf_counter()
    gate.before_process_message(broker, message)
    took = time.perf_counter() - start
    gate.after_process_message(broker, message)
    return took


class Bench:
    def __init__(self, url: str) -> None:
        self.client = redis.Redis.from_url(url)
        self.prefix = f"bench-{uuid.uuid4().hex[:8]}"
        self.broker = StubBroker()
        self.gate = PerKeyConcurrency(
            client=self.client, key_prefix=f"{self.prefix}:gate", concurrency_lease_ms=30_000
        )
        self.broker.add_middleware(self.gate)

        @dramatiq.actor(broker=self.broker, concurrency_key=lambda n: f"k{n}", concurrency_limit=2)
        def finish(n: int) -> None:
            pass

        @dramatiq.actor(
            broker=self.broker,
            concurrency_key=lambda n: f"c{n}",
            concurrency_limit=1,
            concurrency_skip_if_pending=True,
        )
        def finish_coalesced(n: int) -> None:
            pass

        self.finish = finish
        self.coalesced = finish_coalesced

    def drain_deferred(self) -> None:
        for queue in list(self.broker.queues):
            if queue == dq_name(queue.removesuffix(".DQ")) and queue.endswith(".DQ"):
                self.broker.queues[queue].queue.clear()

    def acquire_release(self, i: int) -> float:
        return timed_admission(self.gate, self.broker, self.finish, i % KEYS)

    def deferred(self, i: int) -> float:
        message = MessageProxy(self.finish.message(KEYS + i % KEYS))
        start = time.perf_counter()
        with contextlib.suppress(SkipMessage):
            self.gate.before_process_message(self.broker, message)
        took = time.perf_counter() - start
        if i % 1000 == 0:
            self.drain_deferred()
        return took

    def coalesce(self, i: int) -> float:
        message = MessageProxy(self.coalesced.message(i % KEYS))
        start = time.perf_counter()
        with contextlib.suppress(SkipMessage):
            self.gate.before_process_message(self.broker, message)
        return time.perf_counter() - start

    def fill(self) -> None:
        """Hold every slot of the keys the over-limit scenarios use."""
        leases = GateRedisBackend(self.client)
        for k in range(KEYS):
            for h in range(2):
                leases.acquire(
                    self.gate.backend_key(f"k{KEYS + k}"),
                    f"h:f{k}:{h}",
                    limit=2,
                    lease_ms=600_000,
                    message_id="f",
                )
            leases.acquire(
                self.gate.backend_key(f"c{k}"), f"h:c{k}", limit=1, lease_ms=600_000, message_id="f"
            )

    def cleanup(self) -> None:
        self.gate.heartbeat.stop()
        for key in self.client.scan_iter(match=f"{self.prefix}:*"):
            self.client.delete(key)


def measure(step: Callable[[int], float], n: int) -> dict[str, float]:
    for i in range(min(500, n)):  # warm up: script cache, connections, metric children
        step(i)
    samples = []
    started = time.perf_counter()
    for i in range(n):
        samples.append(step(i))
    wall = time.perf_counter() - started
    return {
        "p50": percentile(samples, 0.50) * 1000,
        "p99": percentile(samples, 0.99) * 1000,
        "mean": statistics.fmean(samples) * 1000,
        "per_s": n / wall,
    }


def measure_threads(step: Callable[[int], float], n: int, threads: int) -> float:
    """Decisions per second of one process with ``threads`` worker threads."""

    def run(offset: int) -> None:
        for i in range(n):
            step(offset * n + i)

    workers = [threading.Thread(target=run, args=(t,)) for t in range(threads)]
    started = time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return n * threads / (time.perf_counter() - started)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--n", type=int, default=5000, help="decisions per scenario")
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--write", type=Path, help="write the results as Markdown here")
    args = parser.parse_args(argv)

    bench = Bench(args.redis_url)
    crl_backend = RedisBackend(client=bench.client)

    def crl(i: int) -> float:
        limiter = ConcurrentRateLimiter(crl_backend, f"{bench.prefix}:crl{i % KEYS}", limit=2)
        start = time.perf_counter()
        limiter._acquire()
        took = time.perf_counter() - start
        limiter._release()
        return took

    def ping(i: int) -> float:
        start = time.perf_counter()
        bench.client.ping()
        return time.perf_counter() - start

    try:
        bench.fill()
        rows = [
            (
                "gate: acquire (under the limit), then release",
                measure(bench.acquire_release, args.n),
            ),
            ("gate: over the limit, defer a copy", measure(bench.deferred, args.n)),
            ("gate: over the limit, skip (pending copy)", measure(bench.coalesce, args.n)),
            ("ConcurrentRateLimiter: acquire, then release", measure(crl, args.n)),
            ("Redis PING round trip (floor)", measure(ping, args.n)),
        ]
        threaded = measure_threads(bench.acquire_release, args.n // args.threads, args.threads)
    finally:
        bench.cleanup()

    lines = [
        "## The per-key gate: cost of one decision",
        "",
        "Command: `python benchmarks/gate_decisions.py "
        + f"--n {args.n} --threads {args.threads}"
        + (f" --write {args.write}`" if args.write else "`"),
        "",
        f"Python {platform.python_version()}, dramatiq {dramatiq.__version__}, "
        f"Redis {bench.client.info('server')['redis_version']} on the same host, "
        f"{args.n} decisions per scenario (after 500 warm-up), one thread unless said.",
        "p50/p99 time the decision alone (`before_process_message`); decisions/s is",
        "the whole loop of one process (for the acquire row: decision + release).",
        "",
        "| scenario | p50 (ms) | p99 (ms) | mean (ms) | decisions/s |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, row in rows:
        lines.append(
            f"| {name} | {row['p50']:.3f} | {row['p99']:.3f} | {row['mean']:.3f} "
            f"| {row['per_s']:,.0f} |"
        )
    gate_p50, crl_p50 = rows[0][1]["p50"], rows[3][1]["p50"]
    lines += [
        f"| gate: acquire + release, {args.threads} threads in one process | | | "
        f"| {threaded:,.0f} |",
        "",
        f"Gate acquire p50 / ConcurrentRateLimiter acquire p50 = {gate_p50 / crl_p50:.2f} "
        f"(same run, same Redis). Targets: p50 <= 2 ms, >= 2,000 decisions/s per process.",
        "The deferral row enqueues the copy on an in-memory stub broker; on a Redis",
        "broker add one enqueue round trip. The threaded row is bound by the GIL:",
        "the client-side Python work (message, metrics, redis-py) dominates the",
        "Redis time, so threads add little on top of one.",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if args.write:
        args.write.write_text(text)


if __name__ == "__main__":
    main()
