"""Private Redis and PostgreSQL servers for the tests that destroy them.

The shared servers on 6379 and 5432 are never flushed nor restarted: a test
that makes Redis lose its data or PostgreSQL restart starts its own server
here, on a free port, with its data in the test's tmp directory, and stops
it afterwards. A missing server binary skips the test on a developer's
machine and fails it under ``CI=true`` (``service_missing``).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import redis

from tests.support.services import service_missing

#: Seconds a private server gets to come up or go down.
SERVER_START_S = 60
#: Where Debian puts PostgreSQL's server binaries.
PG_BIN_GLOB = "/usr/lib/postgresql/*/bin"


def ephemeral_low() -> int:
    """The first port the kernel hands out to outgoing connections. A server
    restarted on its old ports picks them below it: a port in the range can be
    taken by any outgoing connection while the server is down."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until(what: str, check: object, timeout_s: float = SERVER_START_S) -> None:
    """Poll ``check()`` (an external condition, no event to join on) until true."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if check():  # type: ignore[operator]
                return
        except Exception:
            pass
        time.sleep(0.05)
    raise TimeoutError(f"timed out after {timeout_s} s waiting for {what}")


@dataclass
class PrivateRedis:
    """A ``redis-server`` without persistence: a restart loses everything."""

    port: int
    directory: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.url)

    def start(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            service_missing("redis-server (for a private Redis)", "not installed")
        log = (self.directory / "redis.log").open("ab")
        self.process = subprocess.Popen(
            [
                str(binary),
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.directory),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        client = self.client()
        try:
            wait_until(f"private Redis on {self.port}", client.ping)
        finally:
            client.close()

    def stop(self) -> None:
        """Kill it (SIGKILL: no chance to save anything) and wait for it."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=SERVER_START_S)
        self.process = None

    def restart(self) -> None:
        """A crash and restart without persistence: every key is gone."""
        self.stop()
        self.start()

    def flushall(self) -> None:
        client = self.client()
        try:
            client.flushall()
        finally:
            client.close()


@contextmanager
def private_redis(directory: Path) -> Iterator[PrivateRedis]:
    directory.mkdir(parents=True, exist_ok=True)
    server = PrivateRedis(port=free_port(), directory=directory)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def pg_bin() -> Path | None:
    found = sorted(Path("/").glob(PG_BIN_GLOB.lstrip("/")), key=lambda p: p.parent.name)
    for candidate in reversed(found):
        if (candidate / "initdb").exists() and (candidate / "pg_ctl").exists():
            return candidate
    return None


@dataclass
class PrivatePostgres:
    """A PostgreSQL cluster of its own: trust auth, a free port, sockets in its dir."""

    bindir: Path
    directory: Path
    port: int

    @property
    def data(self) -> Path:
        return self.directory / "data"

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/covworker"

    def _as_postgres(self, *args: str) -> subprocess.CompletedProcess[str]:
        command = [*args]
        if os.geteuid() == 0:  # initdb and postgres refuse to run as root
            command = ["runuser", "-u", "postgres", "--", *args]
        return subprocess.run(
            command, capture_output=True, text=True, timeout=SERVER_START_S, check=False
        )

    def init(self) -> None:
        if os.geteuid() == 0:
            shutil.chown(self.directory, "postgres", "postgres")
        done = self._as_postgres(
            str(self.bindir / "initdb"),
            "-D",
            str(self.data),
            "-U",
            "postgres",
            "--auth=trust",
            "--no-sync",
        )
        if done.returncode != 0:
            raise RuntimeError(f"initdb failed: {done.stderr}")

    def pg_ctl(self, *args: str) -> None:
        options = (
            f"-p {self.port} -k {self.directory} -c listen_addresses=127.0.0.1 "
            "-c fsync=off -c max_connections=200"
        )
        done = self._as_postgres(
            str(self.bindir / "pg_ctl"),
            "-D",
            str(self.data),
            "-l",
            str(self.directory / "postgres.log"),
            "-o",
            options,
            "-w",
            "-t",
            str(SERVER_START_S),
            *args,
        )
        if done.returncode != 0:
            raise RuntimeError(f"pg_ctl {' '.join(args)} failed: {done.stdout}{done.stderr}")

    def start(self) -> None:
        self.pg_ctl("start")

    def stop(self) -> None:
        self.pg_ctl("stop", "-m", "fast")

    def restart(self) -> None:
        """Stop (fast: every session is cut) and start again."""
        self.pg_ctl("restart", "-m", "fast")


@contextmanager
def private_postgres() -> Iterator[PrivatePostgres]:
    """A cluster in a fresh directory under /tmp (the ``postgres`` user must be
    able to reach it, which pytest's private tmp_path does not allow)."""
    bindir = pg_bin()
    if bindir is None:
        service_missing("PostgreSQL server binaries (for a private cluster)", "not installed")
        raise AssertionError("unreachable")
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        service_missing("runuser (to run a private PostgreSQL as root)", "not installed")
    directory = Path(tempfile.mkdtemp(prefix="covworker-pg-"))
    server = PrivatePostgres(bindir=bindir, directory=directory, port=free_port())
    try:
        server.init()
        server.start()
        yield server
    finally:
        with suppress(RuntimeError, subprocess.TimeoutExpired):
            server.pg_ctl("stop", "-m", "immediate")
        shutil.rmtree(directory, ignore_errors=True)
