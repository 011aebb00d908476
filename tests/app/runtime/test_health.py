"""Liveness beats: a worker process beats only while its Dramatiq threads live,
and ``check_workers`` / ``check_sweeper`` read the beat files."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from app.runtime.health import SWEEPER_BEAT, HealthBeat, check_sweeper, check_workers, touch
from tests.support.threads import CountedStop

pytestmark = pytest.mark.timeout(30)


def age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def dead_pid() -> int:
    """The pid of a process that has ended and been reaped."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_touch_makes_the_directory_and_writes_the_time(tmp_path: Path) -> None:
    beat = tmp_path / "deep" / "dir" / "x.beat"
    touch(beat)
    assert abs(float(beat.read_text()) - time.time()) < 60


def test_no_beat_at_all_is_not_alive(tmp_path: Path) -> None:
    alive, why = check_workers(tmp_path)
    assert alive is False
    assert why == f"no live worker process has beaten in {tmp_path}"


def test_a_live_process_that_beat_recently_is_alive(tmp_path: Path) -> None:
    touch(tmp_path / f"worker-{os.getpid()}.beat")
    assert check_workers(tmp_path) == (True, "1 worker process(es) alive")


def test_a_live_process_silent_too_long_is_named(tmp_path: Path) -> None:
    touch(tmp_path / f"worker-{os.getppid()}.beat")
    silent = tmp_path / f"worker-{os.getpid()}.beat"
    touch(silent)
    age(silent, 100)
    alive, why = check_workers(tmp_path, max_age_s=30)
    assert alive is False
    assert why.startswith("worker process(es) silent too long: ")
    assert f"{os.getpid()} (100 s)" in why or f"{os.getpid()} (101 s)" in why


def test_the_beat_of_a_process_that_is_gone_is_ignored(tmp_path: Path) -> None:
    gone = tmp_path / f"worker-{dead_pid()}.beat"
    touch(gone)
    age(gone, 1000)
    assert check_workers(tmp_path)[0] is False, "a dead process's fresh beat is no proof"
    touch(tmp_path / f"worker-{os.getpid()}.beat")
    assert check_workers(tmp_path, max_age_s=30) == (True, "1 worker process(es) alive")


def test_the_sweeper_is_alive_while_its_last_sweep_is_recent(tmp_path: Path) -> None:
    alive, why = check_sweeper(tmp_path, max_age_s=60)
    assert alive is False and "has not completed a sweep yet" in why
    touch(tmp_path / SWEEPER_BEAT)
    assert check_sweeper(tmp_path, max_age_s=60)[0] is True
    age(tmp_path / SWEEPER_BEAT, 120)
    alive, why = check_sweeper(tmp_path, max_age_s=60)
    assert alive is False and "more than 60 s" in why


def test_a_worker_beats_while_its_threads_live_and_stops_when_one_dies(tmp_path: Path) -> None:
    consumer_done = threading.Event()
    consumer = threading.Thread(target=consumer_done.wait, daemon=True)
    worker_done = threading.Event()
    worker_thread = threading.Thread(target=worker_done.wait, daemon=True)
    consumer.start()
    worker_thread.start()
    fake: Any = SimpleNamespace(consumers={"q": consumer}, workers=[worker_thread])
    beat = HealthBeat(tmp_path, interval_s=0.001)
    stop = beat._stop = CountedStop()
    path = tmp_path / f"worker-{os.getpid()}.beat"
    beat.after_worker_boot(None, fake)  # type: ignore[arg-type]
    try:
        assert stop.wait_rounds(2)
        assert path.exists(), "alive: it beats"
        consumer_done.set()
        consumer.join()
        path.unlink()
        assert stop.wait_rounds(3)
        assert not path.exists(), "a dead consumer: no more beats"
    finally:
        beat.before_worker_shutdown(None, fake)  # type: ignore[arg-type]
        worker_done.set()
    assert beat._thread is not None
    beat._thread.join(timeout=10)
    assert not path.exists()


def test_a_beat_that_cannot_be_written_does_not_kill_the_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def full_disk(path: Path) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("app.runtime.health.touch", full_disk)
    alive = threading.Thread(target=threading.Event().wait, args=(5,), daemon=True)
    alive.start()
    fake: Any = SimpleNamespace(consumers={"q": alive}, workers=[alive])
    beat = HealthBeat(tmp_path, interval_s=0.001)
    stop = beat._stop = CountedStop()
    beat.after_worker_boot(None, fake)  # type: ignore[arg-type]
    try:
        assert stop.wait_rounds(3), "it goes on beating (and failing) round after round"
        assert beat._thread is not None and beat._thread.is_alive()
    finally:
        beat.before_worker_shutdown(None, fake)  # type: ignore[arg-type]
        if beat._thread is not None:
            beat._thread.join(timeout=10)
    assert "Cannot write the health beat" in caplog.text
