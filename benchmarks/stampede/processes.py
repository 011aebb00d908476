"""Real ``dramatiq`` worker processes, started and stopped for a run.

The benchmark and the end-to-end tests both need "start `dramatiq <module>`
with these settings, stop it cleanly afterwards"; this is that, once.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

#: Seconds a worker gets to stop after SIGTERM before it is killed.
STOP_GRACE_S = 30


@contextmanager
def dramatiq_processes(
    module: str, env: dict[str, str], log: Path, *, processes: int, threads: int
) -> Iterator[subprocess.Popen[bytes]]:
    """``dramatiq <module> --processes P --threads T`` (output to ``log``),
    stopped with SIGTERM on exit (workers finish their messages and run their
    shutdown hooks), the whole process group killed after ``STOP_GRACE_S``."""
    command = [sys.executable, "-m", "dramatiq", module]
    command += ["--processes", str(processes), "--threads", str(threads)]
    with log.open("wb") as out:
        proc = subprocess.Popen(
            command, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            yield proc
        finally:
            stop(proc)


def stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the main process alone, the whole group killed after
    ``STOP_GRACE_S``. Alone: dramatiq's main process forwards SIGTERM to its
    workers, and a worker that gets a second SIGTERM (as a signal to the
    whole group would give it) exits at once, skipping its shutdown hooks."""
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


#: Seconds ``covworker serve`` gets to bind its port.
SERVE_START_TIMEOUT_S = 60
_LISTENING = re.compile(rb"Uvicorn running on (http://\S+)")


def _healthy(base_url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base_url}/healthz", timeout=5) as reply:
            return bool(reply.status == 200)
    except OSError:
        return False


@dataclass(frozen=True)
class Served:
    url: str  # base URL, http://127.0.0.1:PORT
    pid: int  # the ``covworker serve`` process (with one worker, the server itself)


@contextmanager
def covworker_serve(
    env: dict[str, str],
    log: Path,
    *,
    workers: int = 1,
    extra: tuple[str, ...] = (),
    python: str = sys.executable,
    cwd: Path | None = None,
) -> Iterator[Served]:
    """``covworker serve --port 0`` (any free port; output to ``log``) run by
    ``python`` in ``cwd``, yielding its URL and pid once it answers; stopped
    with SIGTERM on exit."""
    command = [python, "-m", "app.cli.main", "serve", "--host", "127.0.0.1"]
    command += ["--port", "0", "--workers", str(workers), *extra]
    with log.open("wb") as out:
        proc = subprocess.Popen(
            command,
            env=env,
            cwd=cwd,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + SERVE_START_TIMEOUT_S

            def waiting() -> None:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"covworker serve did not start:\n{log.read_text()}")
                time.sleep(0.05)  # polling for the condition, not a fixed wait

            while not (found := _LISTENING.search(log.read_bytes())):
                waiting()
            base_url = found.group(1).decode()
            while not _healthy(base_url):  # with --workers, the port listens once a child runs
                waiting()
            yield Served(base_url, proc.pid)
        finally:
            stop(proc)


@dataclass(frozen=True)
class ServerEnvironment:
    """A benchmark's own database and Redis namespace, and the environment of
    the ``covworker`` processes that use them."""

    database_url: str
    database: str
    namespace: str
    env: dict[str, str]


def server_environment(database_url: str, redis_url: str, label: str) -> ServerEnvironment:
    """Names of a fresh database (on ``database_url``'s server) and namespace
    for one run, ``label`` in both; nothing is created. ``COVWORKER_*``
    settings of the calling shell are left out of the processes' environment."""
    from sqlalchemy.engine import make_url

    token = uuid.uuid4().hex[:8]
    database = f"covworker_bench_{label}_{token}"
    url = make_url(database_url).set(database=database).render_as_string(hide_password=False)
    namespace = f"bench-{label}-{token}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("COVWORKER_")}
    env.update(
        DATABASE_URL=url,
        REDIS_URL=redis_url,
        COVWORKER_NAMESPACE=namespace,
        COVWORKER_UPLOAD_URL_SECRET=uuid.uuid4().hex,
        PYTHONUNBUFFERED="1",
    )
    return ServerEnvironment(url, database, namespace, env)
