"""Every message delivered twice: the results are the same as delivered once.

The uploading side and the workers (``tests.support.faults.worker_app`` with
``COVWORKER_TEST_DUPLICATE_KEY``) enqueue every new message twice with the
same message id, so each processor, finisher and notify runs twice,
sometimes at the same moment on two processes.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import redis

from app.worker import build_app
from tests.support.faults.harness import (
    FAST_RECOVERY,
    join_queue,
    plan_commits,
    record,
    settings_for,
    sized,
    upload_in_process,
)
from tests.support.faults.instruments import send_everything_twice
from tests.support.faults.tally import tally
from tests.support.processes import covworker, dramatiq_workers, service_env
from tests.support.services import fresh_database, redis_test_url, require_redis

pytestmark = [pytest.mark.e2e, pytest.mark.integration, pytest.mark.timeout(300)]

COMMITS = sized(4, 10)
UPLOADS = sized(15, 50)


def test_every_message_delivered_twice_still_merges_each_upload_once(
    tmp_path: Path, namespace: str
) -> None:
    client = require_redis()
    plans = plan_commits(COMMITS, UPLOADS, malformed_every=5, mixed=True, tag="dup")
    counter = f"{namespace}:duplicates"
    with fresh_database() as db_url:
        env = service_env(
            redis_test_url(),
            db_url,
            namespace,
            COVWORKER_TEST_DUPLICATE_KEY=counter,
            COVWORKER_MERGE_BATCH_SIZE="5",
            **FAST_RECOVERY,
        )
        assert covworker(env, "db", "upgrade").returncode == 0
        uploader = build_app(
            settings_for(redis_test_url(), db_url, namespace),
            redis_client=redis.Redis.from_url(redis_test_url()),
        )
        send_everything_twice(uploader.broker, client, counter)
        try:
            with dramatiq_workers(
                env,
                tmp_path / "worker.log",
                processes=2,
                threads=4,
                module="tests.support.faults.worker_app",
            ):
                for plan in plans:
                    upload_in_process(uploader, tmp_path, plan)
                join_queue(redis_test_url(), namespace, timeout_s=240)
        finally:
            uploader.close()
        result = tally(db_url, plans)
    duplicates = int(client.get(counter) or 0)
    client.delete(counter)

    record("duplicate-delivery", **result.summary(), faults=duplicates)
    uploads = sum(len(p.jobs) + p.malformed for p in plans)
    assert duplicates >= uploads  # at least every processor message was sent twice
    result.assert_exactly_once()
