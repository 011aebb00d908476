"""``RedisLossWatch``: a thread per worker process calling its check every interval,
through errors, until the worker shuts down. (Redis losing its data and the
re-drive that follows: ``tests/faults/test_redis_loses_its_data.py``.)"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from app.recovery.watch import RedisLossWatch
from tests.support.threads import CountedStop

pytestmark = pytest.mark.timeout(30)


def test_the_check_runs_every_round_until_the_worker_shuts_down() -> None:
    calls: list[str] = []
    watch = RedisLossWatch(
        check=lambda: calls.append(threading.current_thread().name), interval_s=0.001
    )
    stop = watch._stop = CountedStop()
    watch.after_worker_boot(None, None)  # type: ignore[arg-type]
    thread = watch._thread
    assert thread is not None and thread.daemon
    assert stop.wait_rounds(3)
    watch.before_worker_shutdown(None, None)  # type: ignore[arg-type]
    assert watch._thread is None and not thread.is_alive()
    assert len(calls) >= 3
    assert set(calls) == {"covworker-redis-loss-watch"}, "off the worker's own threads"


def test_a_check_that_raises_is_logged_and_tried_again(caplog: pytest.LogCaptureFixture) -> None:
    outcomes: list[Any] = [ConnectionError("Redis restarting"), None, None]
    seen: list[Any] = []

    def check() -> None:
        outcome = outcomes.pop(0) if outcomes else None
        seen.append(outcome)
        if outcome is not None:
            raise outcome

    watch = RedisLossWatch(check=check, interval_s=0.001)
    stop = watch._stop = CountedStop()
    watch.after_worker_boot(None, None)  # type: ignore[arg-type]
    try:
        assert stop.wait_rounds(3)
    finally:
        watch.before_worker_shutdown(None, None)  # type: ignore[arg-type]
    assert len(seen) >= 3, "the thread survived the error"
    assert "Could not check Redis for data loss; trying again." in caplog.text


def test_a_watch_started_again_after_a_shutdown_runs_again() -> None:
    calls = 0

    def check() -> None:
        nonlocal calls
        calls += 1

    watch = RedisLossWatch(check=check, interval_s=0.001)
    stop = watch._stop = CountedStop()
    watch.after_worker_boot(None, None)  # type: ignore[arg-type]
    assert stop.wait_rounds(1)
    watch.before_worker_shutdown(None, None)  # type: ignore[arg-type]
    before = calls
    watch.after_worker_boot(None, None)  # type: ignore[arg-type]
    try:
        assert stop.wait_rounds(2)
    finally:
        watch.before_worker_shutdown(None, None)  # type: ignore[arg-type]
    assert calls > before
