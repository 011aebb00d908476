"""Real ``dramatiq`` worker processes, started and stopped for a run.

The benchmark and the end-to-end tests both need "start `dramatiq <module>`
with these settings, stop it cleanly afterwards"; this is that, once.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
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
            if proc.poll() is None:
                # The main process alone: it forwards SIGTERM to its workers,
                # and a worker that gets a second SIGTERM (as a signal to the
                # whole group would give it) exits at once, skipping its
                # shutdown hooks.
                os.kill(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=STOP_GRACE_S)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
