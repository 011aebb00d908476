"""A real Redis Cluster of 6 ``redis-server`` processes: 3 primaries, 3 replicas.

Each node listens on a free local port with its own directory; the cluster
is made with ``redis-cli --cluster create ... --cluster-replicas 1
--cluster-yes``, as an operator would, and the processes and directories are
removed afterwards. ``cluster-node-timeout`` is short (2 s) so a killed
primary's replica is promoted within seconds.
"""

from __future__ import annotations

import random
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import redis
from redis.cluster import RedisCluster

from tests.support.private_services import ephemeral_low
from tests.support.services import service_missing

NODE_TIMEOUT_MS = 2000


def _free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port(taken: set[int]) -> int:
    """A free port whose cluster bus port (+10000) is free too, both below the
    ephemeral range (a killed node restarts on them)."""
    while True:
        port = random.randrange(10_000, ephemeral_low() - 10_000)
        both = (port, port + 10_000)
        if not taken.intersection(both) and all(_free(p) for p in both):
            taken.update((port, port + 10_000))
            return port


@dataclass
class RedisClusterNodes:
    """The running cluster: its nodes' ports and processes."""

    root: Path
    ports: list[int]
    processes: dict[int, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def url(self) -> str:
        """A seed node's URL, as ``REDIS_URL`` names a cluster."""
        return f"redis://127.0.0.1:{self.ports[0]}/0"

    def node(self, port: int) -> redis.Redis:
        return redis.Redis(port=port, socket_timeout=5)

    def role(self, port: int) -> str:
        return str(self.node(port).info("replication")["role"])

    def primaries(self) -> list[int]:
        return [p for p in self.ports if p in self.processes and self._alive_role(p) == "master"]

    def _alive_role(self, port: int) -> str:
        try:
            return self.role(port)
        except redis.RedisError:
            return "down"

    def replica_of(self, primary: int) -> int:
        """The port of a live replica of the primary on ``primary``."""
        node_id = self.node(primary).execute_command("CLUSTER MYID")
        node_id = node_id.decode() if isinstance(node_id, bytes) else node_id
        for port in self.ports:
            if port == primary or port not in self.processes:
                continue
            info = self.node(port).info("replication")
            if info.get("role") == "slave" and int(info.get("master_port", 0)) == primary:
                return port
        raise LookupError(f"no replica of {primary} ({node_id})")

    def primary_of_key(self, key: str) -> int:
        slot = int(self.node(self.ports[0]).execute_command("CLUSTER KEYSLOT", key))
        for start, end, primary, *_ in self.node(self.ports[0]).execute_command("CLUSTER SLOTS"):
            if int(start) <= slot <= int(end):
                return int(primary[1])
        raise LookupError(slot)

    def kill(self, port: int) -> None:
        """SIGKILL a node (its replica is promoted after ``NODE_TIMEOUT_MS``)."""
        proc = self.processes.pop(port)
        proc.kill()
        proc.wait(timeout=10)

    def failover_to(self, replica: int) -> None:
        """Promote ``replica`` (``CLUSTER FAILOVER``, the primary agreeing) and wait for it."""
        self.node(replica).execute_command("CLUSTER FAILOVER")
        wait_until(lambda: self.role(replica) == "master", 20, f"{replica} promoted")

    def cluster_ok(self) -> bool:
        for port in list(self.processes):
            try:
                info = self.node(port).cluster("INFO")
            except redis.RedisError:
                return False
            if str(info.get("cluster_state")) != "ok":
                return False
        return True

    def client(self) -> RedisCluster:
        return RedisCluster.from_url(self.url)


def wait_until(condition: object, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if condition():  # type: ignore[operator]
                return
        except redis.RedisError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.1)


@contextmanager
def redis_cluster(nodes: int = 6) -> Iterator[RedisClusterNodes]:
    """Start the cluster (skipped, or failed under CI=true, without redis-server)."""
    server, cli = shutil.which("redis-server"), shutil.which("redis-cli")
    if not server or not cli:
        service_missing("redis-server/redis-cli", "not installed")
    root = Path(tempfile.mkdtemp(prefix="cw-cluster-"))
    taken: set[int] = set()
    cluster = RedisClusterNodes(root=root, ports=[free_port(taken) for _ in range(nodes)])
    try:
        for port in cluster.ports:
            folder = root / str(port)
            folder.mkdir()
            cluster.processes[port] = subprocess.Popen(
                [str(server), "--port", str(port), "--bind", "127.0.0.1",
                 "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                 "--cluster-node-timeout", str(NODE_TIMEOUT_MS), "--save", "",
                 "--appendonly", "no", "--dir", str(folder), "--logfile", "redis.log"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
        for port in cluster.ports:
            wait_until(lambda p=port: cluster.node(p).ping(), 20, f"redis-server on {port}")
        created = subprocess.run(
            [str(cli), "--cluster", "create", *(f"127.0.0.1:{p}" for p in cluster.ports),
             "--cluster-replicas", "1", "--cluster-yes"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert created.returncode == 0, created.stdout + created.stderr
        wait_until(cluster.cluster_ok, 30, "cluster_state:ok on every node")
        wait_until(lambda: len(cluster.primaries()) == nodes // 2, 30, "the primaries")
        wait_until(
            lambda: sum(cluster._alive_role(p) == "slave" for p in cluster.ports) == nodes // 2,
            30,
            "a replica of each primary",
        )
        yield cluster
    finally:
        for proc in cluster.processes.values():
            proc.kill()
        for proc in cluster.processes.values():
            proc.wait(timeout=10)
        shutil.rmtree(root, ignore_errors=True)
