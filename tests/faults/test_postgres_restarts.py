"""PostgreSQL restarts mid-run: actors retry with backoff, nothing is lost or doubled.

A private PostgreSQL cluster (the shared one is never restarted) is
restarted with ``pg_ctl restart -m fast`` once a third of the uploads are
merged: every session is cut, in the middle of processor updates and merge
transactions. The failed messages go back through Dramatiq's Retries (with
``COVWORKER_MIN_BACKOFF_MS`` backoff); the fences make the retries exact.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from app.db.models import UploadState
from tests.support.faults.harness import (
    FAST_RECOVERY,
    join_queue,
    plan_commits,
    record,
    sized,
    upload_with_cli,
)
from tests.support.faults.tally import all_settled, count_uploads, tally
from tests.support.private_services import private_postgres, wait_until
from tests.support.processes import covworker, dramatiq_workers, service_env
from tests.support.services import redis_test_url, require_redis

pytestmark = [pytest.mark.e2e, pytest.mark.integration, pytest.mark.timeout(300)]

COMMITS = sized(3, 10)
UPLOADS = sized(20, 100)


def test_postgres_restarting_mid_run_is_retried_and_loses_or_doubles_nothing(
    tmp_path: Path, namespace: str
) -> None:
    require_redis()
    plans = plan_commits(COMMITS, UPLOADS, malformed_every=10, tag="pg")
    total = sum(len(p.jobs) + p.malformed for p in plans)
    with private_postgres() as server:
        env = service_env(
            redis_test_url(),
            server.url,
            namespace,
            COVWORKER_MERGE_BATCH_SIZE="5",
            # Slow passes, so the restart lands in the middle of the run.
            COVWORKER_FAULT_POINTS="merge.in_transaction=sleep:0.2",
            **FAST_RECOVERY,
        )
        migrated = covworker(env, "db", "upgrade")
        assert migrated.returncode == 0, migrated.stderr
        for plan in plans:
            upload_with_cli(env, tmp_path, plan)
        log = tmp_path / "worker.log"
        with dramatiq_workers(env, log, processes=2, threads=4):
            wait_until(
                "a third of the uploads merged",
                lambda: count_uploads(server.url, UploadState.MERGED) >= total // 3,
                timeout_s=120,
            )
            merged_before = count_uploads(server.url, UploadState.MERGED)
            restarted_at = time.monotonic()
            server.restart()
            wait_until(
                "every upload final and every commit notified",
                lambda: all_settled(server.url, plans),
                timeout_s=180,
            )
            recovered_s = time.monotonic() - restarted_at
            join_queue(redis_test_url(), namespace, timeout_s=120)
        result = tally(server.url, plans)
    output = log.read_text()
    retried = output.count("Retrying message")

    record(
        "postgres-restart",
        **result.summary(),
        faults=1,
        merged_before_restart=merged_before,
        retried_messages=retried,
        dead_lettered=output.count("Retries exceeded"),
        recovery_s=round(recovered_s, 1),
    )
    assert merged_before < result.good, "the restart came after the end"
    assert "Retries exceeded" not in output
    result.assert_exactly_once()
