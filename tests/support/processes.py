"""Real processes, started and stopped for a test or a benchmark run: ``dramatiq``
workers, ``covworker serve``, and ``covworker`` CLI calls (as a user makes them).

Benchmarks import these too (``benchmarks/stampede``), so there is one way to
start and stop each.
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
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.support.services import fresh_database, redis_test_url, require_redis

#: Seconds a worker gets to stop after SIGTERM before it is killed.
STOP_GRACE_S = 30


def stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the main process alone, SIGKILL to its group after ``STOP_GRACE_S``.

    The main process forwards SIGTERM to its workers, and a worker that gets a
    second SIGTERM (as a signal to the whole group would give it) exits at
    once, skipping its shutdown hooks.
    """
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@contextmanager
def dramatiq_processes(
    module: str,
    env: dict[str, str],
    log: Path,
    *,
    processes: int,
    threads: int,
    queues: Sequence[str] = (),
    cwd: Path | None = None,
) -> Iterator[subprocess.Popen[bytes]]:
    """``dramatiq <module> --processes P --threads T [--queues Q...]`` (output to
    ``log``), stopped with SIGTERM on exit (workers finish their messages and
    run their shutdown hooks), the whole process group killed after
    ``STOP_GRACE_S``. With no ``queues``, the processes consume every queue;
    ``cwd``: run another source tree's ``app`` (a benchmark's baseline)."""
    command = [sys.executable, "-m", "dramatiq", module]
    command += ["--processes", str(processes), "--threads", str(threads)]
    if queues:
        command += ["--queues", *queues]
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
            yield proc
        finally:
            stop(proc)


#: Clock ticks a second: the unit of ``/proc/PID/stat``'s CPU times.
_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Cost:
    """What a process and its descendants (a ``dramatiq`` main process and its
    workers, ``covworker serve`` and its children) have used so far."""

    cpu_s: float  # user and system CPU seconds, all of them together
    rss: int  # resident bytes now, all of them together
    peak_rss: int  # the largest one's peak resident bytes (VmHWM) since ``reset_peak_rss``


def process_tree(pid: int) -> list[int]:
    """``pid`` and its living descendants."""
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        found.append(parent)
        for task in Path(f"/proc/{parent}/task").glob("*/children"):
            try:
                todo += [int(child) for child in task.read_text().split()]
            except OSError:  # the task ended meanwhile
                continue
    return found


def _status_bytes(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    return 0  # a zombie has no memory


def process_cost(pid: int) -> Cost:
    """The ``Cost`` of ``pid``'s tree, from ``/proc``; a process that ended
    meanwhile is left out."""
    cpu_s, rss, peak = 0.0, 0, 0
    for each in process_tree(pid):
        try:
            fields = Path(f"/proc/{each}/stat").read_text().rsplit(")", 1)[1].split()
            cpu_s += (int(fields[11]) + int(fields[12])) / _TICKS  # utime + stime
            rss += _status_bytes(each, "VmRSS")
            peak = max(peak, _status_bytes(each, "VmHWM"))
        except OSError:
            continue
    return Cost(cpu_s, rss, peak)


def reset_peak_rss(pid: int) -> None:
    """Each process of ``pid``'s tree: its peak resident memory (VmHWM) back
    to what it holds now (``/proc/PID/clear_refs``, Linux 4.0+)."""
    for each in process_tree(pid):
        try:
            Path(f"/proc/{each}/clear_refs").write_text("5")
        except OSError:
            continue


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
    ``python`` in ``cwd`` (a benchmark's other source tree), yielding its URL
    and pid once it answers; stopped with SIGTERM on exit."""
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


def service_env(redis_url: str, database_url: str, namespace: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COVWORKER_")}
    env.update(
        REDIS_URL=redis_url,
        DATABASE_URL=database_url,
        COVWORKER_NAMESPACE=namespace,
        PYTHONUNBUFFERED="1",
        **extra,
    )
    return env


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
    for one benchmark run, ``label`` in both; nothing is created."""
    from sqlalchemy.engine import make_url

    token = uuid.uuid4().hex[:8]
    database = f"covworker_bench_{label}_{token}"
    url = make_url(database_url).set(database=database).render_as_string(hide_password=False)
    namespace = f"bench-{label}-{token}"
    env = service_env(redis_url, url, namespace, COVWORKER_UPLOAD_URL_SECRET=uuid.uuid4().hex)
    return ServerEnvironment(url, database, namespace, env)


def covworker(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """Run the installed ``covworker`` CLI (as a user would) and return its result."""
    return subprocess.run(
        [sys.executable, "-m", "app.cli.main", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def migrated_env(redis_url: str, database_url: str, namespace: str, **extra: str) -> dict[str, str]:
    """``service_env``, its database migrated by ``covworker db upgrade`` (which must succeed)."""
    env = service_env(redis_url, database_url, namespace, **extra)
    migrated = covworker(env, "db", "upgrade")
    assert migrated.returncode == 0, migrated.stderr
    return env


@contextmanager
def migrated_database(namespace: str, **extra: str) -> Iterator[tuple[str, dict[str, str]]]:
    """The opening of a test on real services: the shared Redis required (see
    ``require_redis``), a fresh database at the migrations' head
    (``fresh_database(migrated=True)``), and ``service_env`` on both (``extra``
    over it): ``(database URL, environment)``; the database is dropped on exit."""
    require_redis()
    with fresh_database(migrated=True) as database_url:
        yield database_url, service_env(redis_test_url(), database_url, namespace, **extra)


def add_repo(env: dict[str, str], slug: str, *options: str) -> str:
    """``covworker repo add slug`` (which must succeed); the repository's upload token."""
    added = covworker(env, "repo", "add", slug, *options)
    assert added.returncode == 0, added.stderr
    return added.stdout.strip().splitlines()[-1]


@contextmanager
def dramatiq_workers(
    env: dict[str, str],
    log: Path,
    *,
    processes: int = 2,
    threads: int = 4,
    module: str | None = None,
    cwd: Path | None = None,
) -> Iterator[subprocess.Popen[bytes]]:
    """``dramatiq <module> --processes P --threads T``, stopped with SIGTERM on exit.

    The module is ``app.actors``, the product's worker, unless ``env`` arms
    fault points: those only the test worker app (``tests.support.faults.worker_app``) installs.
    """
    if module is None:
        armed = env.get("COVWORKER_FAULT_POINTS")
        module = "tests.support.faults.worker_app" if armed else "app.actors"
    with dramatiq_processes(
        module, env, log, processes=processes, threads=threads, cwd=cwd
    ) as proc:
        yield proc
