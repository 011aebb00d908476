"""Real ``dramatiq app.actors`` worker processes and real ``covworker`` CLI calls."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from benchmarks.stampede.processes import dramatiq_processes


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


def covworker(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """Run the installed ``covworker`` CLI (as a user would) and return its result."""
    return subprocess.run(
        [sys.executable, "-m", "app.cli.main", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@contextmanager
def dramatiq_workers(
    env: dict[str, str],
    log: Path,
    *,
    processes: int = 2,
    threads: int = 4,
    module: str | None = None,
) -> Iterator[subprocess.Popen[bytes]]:
    """``dramatiq <module> --processes P --threads T``, stopped with SIGTERM on exit.

    The module is ``app.actors``, the product's worker, unless ``env`` arms
    fault points: those only the test worker app (``tests.support.faults.worker_app``) installs.
    """
    if module is None:
        armed = env.get("COVWORKER_FAULT_POINTS")
        module = "tests.support.faults.worker_app" if armed else "app.actors"
    with dramatiq_processes(module, env, log, processes=processes, threads=threads) as proc:
        yield proc
