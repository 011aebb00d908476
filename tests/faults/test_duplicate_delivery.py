"""Every message delivered twice: the results are the same as delivered once.

The uploading side and the workers (``tests.support.faults.worker_app`` with
``COVWORKER_TEST_DUPLICATE_KEY``) enqueue every new message twice with the
same message id, so each processor, finisher and notify runs twice,
sometimes at the same moment on two processes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.faults.harness import plan_commits, planned_uploads, record, sized
from tests.support.faults.instruments import send_everything_twice
from tests.support.faults.runs import through_test_workers
from tests.support.services import require_redis

pytestmark = [pytest.mark.e2e, pytest.mark.integration, pytest.mark.timeout(300)]

COMMITS = sized(4, 10)
UPLOADS = sized(15, 50)


def test_every_message_delivered_twice_still_merges_each_upload_once(
    tmp_path: Path, namespace: str
) -> None:
    client = require_redis()
    plans = plan_commits(COMMITS, UPLOADS, malformed_every=5, mixed=True, tag="dup")
    counter = f"{namespace}:duplicates"
    result, _ = through_test_workers(
        namespace,
        tmp_path,
        plans,
        threads=4,
        timeout_s=240,
        instrument=lambda broker: send_everything_twice(broker, client, counter),
        COVWORKER_TEST_DUPLICATE_KEY=counter,
        COVWORKER_MERGE_BATCH_SIZE="5",
    )
    duplicates = int(client.get(counter) or 0)
    client.delete(counter)

    record("duplicate-delivery", **result.summary(), faults=duplicates)
    assert duplicates >= planned_uploads(plans)  # at least every processor message was sent twice
    result.assert_exactly_once()
