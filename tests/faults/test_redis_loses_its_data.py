"""Redis loses everything mid-run; the sweep re-drives every upload from PostgreSQL.

A private ``redis-server`` (no persistence) carries the broker and the
processing state; the shared one is never touched. Once a third of the
uploads are merged, Redis is emptied: by FLUSHALL (the scheduled sweep,
``covworker sweep --every``, recovers) or by a crash and restart (workers
reconnect; one ``covworker sweep`` recovers). Queued messages, the
processing sets, intermediate reports, locks and gate leases are all gone;
PostgreSQL still has every upload's raw bytes and state.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.db.models import UploadState
from tests.faults.harness import (
    FAST_RECOVERY,
    join_queue,
    plan_commits,
    record,
    sized,
    upload_with_cli,
)
from tests.faults.tally import all_settled, count_uploads, tally
from tests.support.private_services import private_redis, wait_until
from tests.support.processes import covworker, dramatiq_workers, service_env
from tests.support.services import fresh_database

pytestmark = [pytest.mark.e2e, pytest.mark.integration, pytest.mark.timeout(300)]

COMMITS = sized(3, 10)
UPLOADS = sized(20, 100)
#: Seconds a pending upload must be stuck before the test's sweeps re-drive it.
STUCK_AFTER_S = "2"


@pytest.mark.parametrize("loss", ["flushall", "restart"])
def test_redis_losing_its_data_mid_run_loses_no_upload_once_swept(
    loss: str, tmp_path: Path, namespace: str
) -> None:
    plans = plan_commits(COMMITS, UPLOADS, malformed_every=10, tag=f"redis-{loss}")
    total = sum(len(p.jobs) + p.malformed for p in plans)
    with private_redis(tmp_path / "redis") as server, fresh_database() as db_url:
        env = service_env(
            server.url,
            db_url,
            namespace,
            COVWORKER_MERGE_BATCH_SIZE="5",
            COVWORKER_SWEEP_AFTER_S=STUCK_AFTER_S,
            # Slow passes, so the loss lands in the middle of the run.
            COVWORKER_FAULT_POINTS="merge.in_transaction=sleep:0.2",
            **FAST_RECOVERY,
        )
        assert covworker(env, "db", "upgrade").returncode == 0
        sweeper = None
        if loss == "flushall":  # the scheduled sweep, as docker-compose runs it
            sweeper = subprocess.Popen(
                [sys.executable, "-m", "app.cli.main", "sweep", "--every", "1"],
                env=env,
                stdout=(tmp_path / "sweeper.log").open("wb"),
                stderr=subprocess.STDOUT,
            )
        try:
            for plan in plans:
                upload_with_cli(env, tmp_path, plan)
            with dramatiq_workers(env, tmp_path / "worker.log", processes=2, threads=4):
                wait_until(
                    "a third of the uploads merged",
                    lambda: count_uploads(db_url, UploadState.MERGED) >= total // 3,
                    timeout_s=120,
                )
                merged_before = count_uploads(db_url, UploadState.MERGED)
                lost_at = time.monotonic()
                if loss == "flushall":
                    server.flushall()
                else:
                    server.restart()
                    swept = covworker(env, "sweep", "--older-than", "0")
                    assert swept.returncode == 0, swept.stderr
                wait_until(
                    "every upload final and every commit notified",
                    lambda: all_settled(db_url, plans),
                    timeout_s=180,
                )
                recovered_s = time.monotonic() - lost_at
                if sweeper is not None:
                    sweeper.terminate()
                    sweeper.wait(timeout=30)
                join_queue(server.url, namespace, timeout_s=120)
            result = tally(db_url, plans)
            assert merged_before < result.good, "the loss came after the end"
        finally:
            if sweeper is not None and sweeper.poll() is None:
                sweeper.kill()
                sweeper.wait()

    record(
        f"redis-{loss}",
        **result.summary(),
        faults=1,
        merged_before_loss=merged_before,
        recovery_s=round(recovered_s, 1),
    )
    result.assert_exactly_once()
