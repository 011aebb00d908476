"""Redis loses everything mid-run; the workers notice and heal, with no operator.

A private ``redis-server`` (no persistence) carries the broker and the
processing state; the shared one is never touched. Once a third of the
uploads are merged, Redis is emptied: by FLUSHALL, or by a crash and a
restart. Queued messages, the processing sets, intermediate reports, locks,
gate leases and the epoch marker are all gone; PostgreSQL still has every
upload's raw bytes and state. Nobody runs ``covworker sweep``, and every
recovery setting keeps its default: the workers find the epoch marker
missing within ``COVWORKER_REDIS_LOSS_CHECK_S`` and re-drive everything in
flight at once, with no age wait (``app.recovery.watch``).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.support.faults.harness import join_queue, plan_commits, record, sized, upload_with_cli
from tests.support.faults.runs import SLOW_PASSES, fault_mid_run, wait_settled
from tests.support.faults.tally import tally
from tests.support.private_services import private_redis
from tests.support.processes import dramatiq_workers, service_env
from tests.support.services import fresh_database

pytestmark = [pytest.mark.e2e, pytest.mark.integration, pytest.mark.timeout(400)]

COMMITS = sized(3, 10)
UPLOADS = sized(20, 100)
#: Far below the default sweep age (600 s): only the detection of the loss
#: itself can settle the run in time.
RECOVERY_LIMIT_S = 120


@pytest.mark.parametrize("loss", ["flushall", "restart"])
def test_redis_losing_its_data_mid_run_heals_without_an_operator_with_default_settings(
    loss: str, tmp_path: Path, namespace: str
) -> None:
    plans = plan_commits(COMMITS, UPLOADS, malformed_every=10, tag=f"redis-{loss}")
    with private_redis(tmp_path / "redis") as server, fresh_database(migrated=True) as db_url:
        env = service_env(server.url, db_url, namespace, **SLOW_PASSES)
        merged_before, recovered_s = fault_mid_run(
            env,
            tmp_path,
            plans,
            server.flushall if loss == "flushall" else server.restart,
            merged_within_s=180,
            settled_within_s=RECOVERY_LIMIT_S,
        )
        result = tally(db_url, plans)
        assert merged_before < result.good, "the loss came after the end"
        detected = (
            (tmp_path / "worker.log").read_text(errors="replace").count("Redis lost its data")
        )

    record(
        f"redis-{loss}",
        **result.summary(),
        faults=1,
        merged_before_loss=merged_before,
        recovery_s=round(recovered_s, 1),
        recoveries=detected,
    )
    assert detected == 1, "one worker, once, re-drove what was in flight"
    result.assert_exactly_once()


#: Uploads stored before any worker ran, then Redis emptied.
QUEUED_COMMITS = sized(2, 4)
QUEUED_UPLOADS = sized(12, 50)


def test_redis_emptied_before_any_worker_ran_heals_when_the_first_worker_starts(
    tmp_path: Path, namespace: str
) -> None:
    plans = plan_commits(QUEUED_COMMITS, QUEUED_UPLOADS, malformed_every=6, tag="redis-first")
    with private_redis(tmp_path / "redis") as server, fresh_database(migrated=True) as db_url:
        env = service_env(server.url, db_url, namespace)
        for plan in plans:
            upload_with_cli(env, tmp_path, plan)  # rows, processing sets and messages stored
        server.flushall()  # Redis restarted without persistence before any worker ran
        log = tmp_path / "worker.log"
        started = time.monotonic()
        with dramatiq_workers(env, log, processes=2, threads=4):
            recovered_s = wait_settled(db_url, plans, since=started, timeout_s=RECOVERY_LIMIT_S)
            join_queue(server.url, namespace, timeout_s=120)
        result = tally(db_url, plans)
        recoveries = log.read_text(errors="replace").count("First epoch marker set")

    record(
        "redis-emptied-before-any-worker",
        **result.summary(),
        faults=1,
        recovery_s=round(recovered_s, 1),
        recoveries=recoveries,
    )
    assert recoveries == 1, "one worker, once, re-drove what Redis did not know"
    result.assert_exactly_once()
