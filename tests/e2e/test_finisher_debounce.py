"""The finisher's debounce window in real worker processes, with a worker killed inside it.

Real ``dramatiq app.actors`` processes, real Redis and PostgreSQL: a
commit's uploads are processed while its first finisher's window is open
(their finishers arrive during the window and coalesce into it), the worker
process holding the window's copy is SIGKILLed inside the window, and a
second worker takes over once the broker requeues the dead worker's
messages. Every upload must be merged exactly once, with exactly one
notification, in the one merge pass of the window's copy.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import redis
import sqlalchemy as sa
from dramatiq.brokers.redis import RedisBroker

from app.db.models import Commit, Notification, ReportUpload, Repository, Upload, UploadState
from app.runtime.worker import join_queues
from tests.support.pipeline import DEFAULT_QUEUES
from tests.support.processes import covworker, dramatiq_workers, migrated_database
from tests.support.services import require_redis
from tests.support.synthetic import ci_matrix

pytestmark = [pytest.mark.e2e, pytest.mark.integration, pytest.mark.timeout(240)]

UPLOADS = 12
#: Long enough to kill a worker inside it; the default is 250 ms.
WINDOW_MS = 3000
#: Recovery in seconds (as the fault suite sets it): a dead worker's messages
#: are requeued once its heartbeat is this old.
FAST = {
    "COVWORKER_FINISHER_DEBOUNCE_MS": str(WINDOW_MS),
    "COVWORKER_BROKER_HEARTBEAT_TIMEOUT_MS": "5000",
    "COVWORKER_BROKER_MAINTENANCE_CHANCE": "1000000",
    "COVWORKER_FINISHER_LOCK_TIMEOUT_S": "2",
    "COVWORKER_GATE_LEASE_MS": "2000",
    "COVWORKER_GATE_DELAY_MS": "50",
    "COVWORKER_GATE_JITTER_MS": "100",
}


def wait_for(condition: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)  # polling a condition


def window_open(client: redis.Redis, namespace: str) -> bool:
    """A finisher's debounce copy is pending: the gate's marker of some commit."""
    for key in client.scan_iter(match=f"{namespace}:gate:*", count=100):
        if any(m.startswith(b"p:") for m in client.zrange(key, 0, -1)):
            return True
    return False


def test_a_worker_killed_inside_the_window_loses_nothing_and_the_commit_notifies_once(
    tmp_path: Path, namespace: str
) -> None:
    client = require_redis()
    repo, sha = "acme/debounce", "d" * 40
    with migrated_database(namespace, **FAST) as (db_url, env):
        reports = []
        for name, data in ci_matrix(UPLOADS, 4, 20):
            path = tmp_path / name
            path.write_bytes(data)
            reports.append(str(path))
        first_log, second_log = tmp_path / "first.log", tmp_path / "second.log"
        engine = sa.create_engine(db_url)

        def all_processed() -> bool:
            with engine.connect() as conn:
                count = conn.scalar(
                    sa.select(sa.func.count()).where(Upload.state == UploadState.PROCESSED)
                )
            return count == UPLOADS

        with dramatiq_workers(env, first_log, processes=1, threads=4) as first:
            done = covworker(env, "upload", "--create", "--repo", repo, "--commit", sha, *reports)
            assert done.returncode == 0, done.stderr
            # The first finisher opened the window: its copy waits in this worker,
            # and every other upload's finisher arrives while it is open.
            wait_for(lambda: window_open(client, namespace), 60, "the debounce window")
            wait_for(all_processed, 60, "every upload processed")
            os.killpg(first.pid, signal.SIGKILL)  # the session dramatiq_processes started
            first.wait()
        # Killed inside the window: its marker stands, so the copy had not started.
        assert window_open(client, namespace), "the worker died after the window closed"
        with dramatiq_workers(env, second_log, processes=1, threads=4):
            broker = RedisBroker(client=client, namespace=f"{namespace}-dramatiq")

            def settled() -> bool:
                with engine.connect() as conn:
                    notes = conn.scalar(sa.select(sa.func.count()).select_from(Notification))
                return bool(notes)

            wait_for(settled, 120, "the notification")
            # Whatever is left, delayed included.
            join_queues(broker, DEFAULT_QUEUES, timeout_ms=120_000)
        with engine.connect() as conn:
            commit_id = conn.scalar(sa.select(Commit.id).join(Repository).where(Commit.sha == sha))
            states = list(
                conn.scalars(sa.select(Upload.state).where(Upload.commit_id == commit_id))
            )
            merged = list(
                conn.scalars(
                    sa.select(ReportUpload.upload_id).where(ReportUpload.commit_id == commit_id)
                )
            )
            notes = conn.scalar(
                sa.select(sa.func.count()).where(Notification.commit_id == commit_id)
            )
        engine.dispose()
    stats = {
        k.decode(): int(v)
        for key in client.scan_iter(match=f"{namespace}:*:stats", count=100)
        for k, v in client.hgetall(key).items()
    }
    assert states == [UploadState.MERGED] * UPLOADS
    assert len(merged) == UPLOADS and len(set(merged)) == UPLOADS, "each merged exactly once"
    assert notes == 1
    # Every finisher arrived inside the one window: its copy's run, after the
    # kill, did all of their work in one pass.
    assert stats.get("merge_passes") == 1, stats
    assert " ERROR " not in second_log.read_text(), second_log.read_text()[-3000:]
