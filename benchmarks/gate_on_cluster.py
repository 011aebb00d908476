"""Micro-benchmark: one gate decision on a Redis Cluster vs a single Redis, same run.

Not a test: it measures. It starts a private 3-primary + 3-replica cluster
(``tests.support.redis_cluster``: 6 local ``redis-server`` processes, removed
after), and times the gate's decision (``before_process_message``, then the
release) on 100 keys spread over every shard, and a PING, first on the single
Redis at ``--redis-url``, then on the cluster, interleaved in rounds so load
on the machine hits both alike.

    python benchmarks/gate_on_cluster.py [--n 5000] [--rounds 4]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import dramatiq
import redis
from dramatiq.brokers.stub import StubBroker

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.runtime.cluster import cluster_client
from benchmarks.gate_decisions import KEYS, percentile, timed_admission
from middleware import PerKeyConcurrency
from tests.support.redis_cluster import redis_cluster


class GateOn:
    """The gate on one client, with a gated actor on a stub broker."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.prefix = f"bench-{uuid.uuid4().hex[:8]}"
        self.broker = StubBroker()
        self.gate = PerKeyConcurrency(
            client=client, key_prefix=f"{self.prefix}:gate", concurrency_lease_ms=30_000
        )
        self.broker.add_middleware(self.gate)
        self.finish = dramatiq.actor(
            broker=self.broker, concurrency_key=lambda n: f"k{n}", concurrency_limit=2
        )(lambda n: None)

    def decision(self, i: int) -> float:
        return timed_admission(self.gate, self.broker, self.finish, i % KEYS)

    def ping(self, i: int) -> float:
        key = f"{self.prefix}:{{k{i % KEYS}}}"  # routed like a gate key
        start = time.perf_counter()
        self.client.exists(key)
        return time.perf_counter() - start

    def close(self) -> None:
        self.gate.heartbeat.stop()
        for key in self.client.scan_iter(match=f"{self.prefix}:*"):
            self.client.delete(key)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--n", type=int, default=5000, help="decisions per side and round")
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args(argv)
    samples: dict[str, list[float]] = {k: [] for k in ("single", "cluster", "sping", "cping")}
    with redis_cluster() as nodes:
        single, cluster = (
            GateOn(redis.Redis.from_url(args.redis_url)),
            GateOn(cluster_client(nodes.url)),
        )
        try:
            for gate in (single, cluster):  # warm up: scripts, connections
                for i in range(500):
                    gate.decision(i)
            for _ in range(args.rounds):
                samples["single"] += [single.decision(i) for i in range(args.n)]
                samples["cluster"] += [cluster.decision(i) for i in range(args.n)]
                samples["sping"] += [single.ping(i) for i in range(args.n)]
                samples["cping"] += [cluster.ping(i) for i in range(args.n)]
        finally:
            single.close()
            cluster.close()
    ms = {k: (percentile(v, 0.5) * 1000, percentile(v, 0.99) * 1000) for k, v in samples.items()}
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"Command: python benchmarks/gate_on_cluster.py --n {args.n} --rounds {args.rounds}")
    print(f"load average at the end: {load}")
    print("| what | p50 (ms) | p99 (ms) |\n|---|---:|---:|")
    names = {
        "single": "gate decision, single Redis",
        "cluster": "gate decision, Redis Cluster (3+3)",
        "sping": "EXISTS round trip, single Redis",
        "cping": "EXISTS round trip, Redis Cluster",
    }
    for key, name in names.items():
        print(f"| {name} | {ms[key][0]:.3f} | {ms[key][1]:.3f} |")
    print(f"\ncluster / single p50 = {ms['cluster'][0] / ms['single'][0]:.2f} (target <= 1.5)")


if __name__ == "__main__":
    main()
