"""PostgreSQL restarts mid-run: actors retry with backoff, nothing is lost or doubled.

A private PostgreSQL cluster (the shared one is never restarted) is
restarted with ``pg_ctl restart -m fast`` once a third of the uploads are
merged: every session is cut, in the middle of processor updates and merge
transactions. The failed messages go back through Dramatiq's Retries (with
``COVWORKER_MIN_BACKOFF_MS`` backoff); the fences make the retries exact.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.faults.harness import FAST_RECOVERY, plan_commits, record, sized
from tests.support.faults.runs import SLOW_PASSES, fault_mid_run
from tests.support.faults.tally import tally
from tests.support.private_services import private_postgres
from tests.support.processes import migrated_env
from tests.support.services import redis_test_url, require_redis

pytestmark = [pytest.mark.e2e, pytest.mark.integration, pytest.mark.timeout(300)]

COMMITS = sized(3, 10)
UPLOADS = sized(20, 100)


def test_postgres_restarting_mid_run_is_retried_and_loses_or_doubles_nothing(
    tmp_path: Path, namespace: str
) -> None:
    require_redis()
    plans = plan_commits(COMMITS, UPLOADS, malformed_every=10, tag="pg")
    with private_postgres() as server:
        env = migrated_env(redis_test_url(), server.url, namespace, **SLOW_PASSES, **FAST_RECOVERY)
        merged_before, recovered_s = fault_mid_run(
            env, tmp_path, plans, server.restart, merged_within_s=120, settled_within_s=180
        )
        result = tally(server.url, plans)
    output = (tmp_path / "worker.log").read_text()
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
