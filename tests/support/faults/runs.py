"""How a fault scenario runs its workers: uploads in process to the test worker
app, or through the CLI with a fault injected once a third is merged; both
wait on PostgreSQL (``tests.support.faults.tally``) and then on the queues."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import dramatiq
import redis

from app.db.models import UploadState
from app.runtime.worker import build_app
from app.settings import Settings
from tests.support.faults.harness import (
    CommitPlan,
    fresh_stack,
    join_queue,
    planned_uploads,
    upload_in_process,
    upload_with_cli,
)
from tests.support.faults.tally import Tally, all_settled, count_uploads, tally
from tests.support.private_services import wait_until
from tests.support.processes import dramatiq_workers

#: Slow merge passes (small batches, each paused in its transaction), so a
#: fault lands in the middle of the run.
SLOW_PASSES = {
    "COVWORKER_MERGE_BATCH_SIZE": "5",
    "COVWORKER_FAULT_POINTS": "merge.in_transaction=sleep:0.2",
}


def through_test_workers(
    namespace: str,
    tmp: Path,
    plans: list[CommitPlan],
    *,
    threads: int,
    timeout_s: float,
    instrument: Callable[[dramatiq.Broker], object] = lambda broker: None,
    **settings: str,
) -> tuple[Tally, float]:
    """``plans`` uploaded in process (by the app ``covworker upload`` builds, its
    broker passed to ``instrument`` first) to two processes of the test worker
    app (``fresh_stack(namespace, **settings)``, log ``tmp/worker.log``) until
    the queues are empty: the tally, and the seconds from the workers' start."""
    with fresh_stack(namespace, **settings) as (db_url, env):
        redis_url = env["REDIS_URL"]
        uploader = build_app(
            Settings(redis_url=redis_url, database_url=db_url, namespace=namespace),
            redis_client=redis.Redis.from_url(redis_url),
        )
        try:
            instrument(uploader.broker)
            started = time.monotonic()
            with dramatiq_workers(
                env,
                tmp / "worker.log",
                processes=2,
                threads=threads,
                module="tests.support.faults.worker_app",
            ):
                for plan in plans:
                    upload_in_process(uploader, tmp, plan)
                join_queue(redis_url, namespace, timeout_s=timeout_s)
                elapsed = time.monotonic() - started
        finally:
            uploader.close()
        return tally(db_url, plans), elapsed


def wait_settled(db_url: str, plans: list[CommitPlan], *, since: float, timeout_s: float) -> float:
    """Wait until ``all_settled``; the seconds since ``since`` (a ``time.monotonic()``)."""
    wait_until(
        "every upload final and every commit notified",
        lambda: all_settled(db_url, plans),
        timeout_s=timeout_s,
    )
    return time.monotonic() - since


def fault_mid_run(
    env: dict[str, str],
    tmp: Path,
    plans: list[CommitPlan],
    fault: Callable[[], object],
    *,
    merged_within_s: float,
    settled_within_s: float,
) -> tuple[int, float]:
    """``plans`` uploaded with the CLI, then two worker processes run (log
    ``tmp/worker.log``): ``fault()`` once a third of the uploads are merged, then
    wait until they settle and the queues drain. The uploads merged before the
    fault, and the seconds from the fault to settling."""
    db_url = env["DATABASE_URL"]
    for plan in plans:
        upload_with_cli(env, tmp, plan)
    with dramatiq_workers(env, tmp / "worker.log", processes=2, threads=4):
        wait_until(
            "a third of the uploads merged",
            lambda: count_uploads(db_url, UploadState.MERGED) >= planned_uploads(plans) // 3,
            timeout_s=merged_within_s,
        )
        merged_before = count_uploads(db_url, UploadState.MERGED)
        faulted_at = time.monotonic()
        fault()
        recovered_s = wait_settled(db_url, plans, since=faulted_at, timeout_s=settled_within_s)
        join_queue(env["REDIS_URL"], env["COVWORKER_NAMESPACE"], timeout_s=120)
    return merged_before, recovered_s
