"""A worker process SIGKILLed in the middle of a merge pass loses and doubles nothing.

The fault point (``tests.support.faults.points``) kills the worker process the second time any
of its finishers reaches it, so one pass has already merged and the next
dies: holding the commit lock with its batch read, inside the merge
transaction (uploads flipped, not committed), or after the commit but
before the Redis SREM. A replacement worker then starts; the broker
requeues the dead worker's unacked messages once its heartbeat is
``COVWORKER_BROKER_HEARTBEAT_TIMEOUT_MS`` old, and the commit settles.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from dramatiq.cli import RET_KILLED

from app.db.models import UploadState
from tests.support.brokers import BROKERS, broker_env, settle
from tests.support.faults.harness import (
    FULL,
    fresh_stack,
    plan_commits,
    record,
    sized,
    upload_with_cli,
)
from tests.support.faults.tally import count_uploads, tally
from tests.support.processes import dramatiq_workers, service_env

pytestmark = [pytest.mark.e2e, pytest.mark.integration, pytest.mark.timeout(300)]

#: Uploads of the commit, and how many a merge pass takes (so there are several passes).
UPLOADS = sized(24, 100)
BATCH = sized(4, 10)
#: Where the worker dies: all three at ``COVWORKER_TEST_SCALE=full``; by
#: default the one inside the merge transaction (uploads flipped, not
#: committed), the hardest, to keep CI short.
KILL_POINTS = (
    ["merge.locked", "merge.in_transaction", "merge.committed"]
    if FULL
    else ["merge.in_transaction"]
)


@pytest.mark.parametrize("broker", BROKERS)
@pytest.mark.parametrize("point", KILL_POINTS)
def test_a_worker_killed_mid_merge_is_replaced_and_every_upload_is_merged_once(
    point: str, broker: str, tmp_path: Path, namespace: str
) -> None:
    plans = plan_commits(1, UPLOADS, tag="kill")
    with (
        broker_env(broker, namespace) as chosen,
        fresh_stack(namespace, COVWORKER_MERGE_BATCH_SIZE=str(BATCH), **chosen) as (db_url, env),
    ):
        upload_with_cli(env, tmp_path, plans[0])

        doomed = {**env, "COVWORKER_FAULT_POINTS": f"{point}=kill@2"}
        with dramatiq_workers(doomed, tmp_path / "doomed.log", processes=1, threads=4) as proc:
            proc.wait(timeout=120)  # the child kills itself; the parent then stops
        killed_at = time.monotonic()
        doomed_log = (tmp_path / "doomed.log").read_text()
        # The fault point fired and the worker died of a signal: Dramatiq's parent
        # exits with RET_KILLED when a worker's exit code is negative. (Its own
        # "exited unexpectedly (code -9)" line can be lost: it logs through a
        # pipe whose reader it stops right after.)
        assert f"Fault point {point}, hit 2: kill" in doomed_log, doomed_log[-3000:]
        assert proc.returncode == RET_KILLED, doomed_log[-3000:]
        merged_before = count_uploads(db_url, UploadState.MERGED)
        assert 0 < merged_before < UPLOADS  # one pass committed, then the kill

        with dramatiq_workers(env, tmp_path / "replacement.log", processes=1, threads=4):
            settle(env, timeout_s=180)
            recovered_s = time.monotonic() - killed_at
        result = tally(db_url, plans)
        replacement_log = (tmp_path / "replacement.log").read_text()

    record(
        f"kill@{point}",
        **result.summary(),
        faults=1,
        merged_before_kill=merged_before,
        recovery_s=round(recovered_s, 1),
    )
    result.assert_exactly_once()
    assert " CRITICAL " not in replacement_log, replacement_log[-3000:]


def test_the_worker_refuses_to_start_with_a_lock_that_outlives_its_heartbeat(
    namespace: str,
) -> None:
    env = service_env(
        "redis://127.0.0.1:1/0",
        "postgresql://nobody@127.0.0.1:1/none",
        namespace,
        COVWORKER_FINISHER_LOCK_TIMEOUT_S="60",
        COVWORKER_BROKER_HEARTBEAT_TIMEOUT_MS="60000",
    )
    done = subprocess.run(
        [sys.executable, "-c", "import app.actors"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "must expire before its message is redelivered" in done.stderr
