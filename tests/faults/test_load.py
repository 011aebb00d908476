"""Load: many commits of many uploads, mixed formats, 5 % malformed, two worker processes.

Every good upload is merged once, every bad one ends ``error`` with a
reason, each commit notifies once, and the gate's bound holds: every gated
run of ``upload_finisher`` and ``notify`` is recorded with its start and end
times (``tests.support.faults.instruments.RunRecorder``, inside the gate slot) and
no instant has more than ``COVWORKER_FINISHER_CONCURRENCY`` finishers (1
notify message) running for one commit. The finisher that settles a commit
writes its notification in its own delivery, so notify messages run only
where that failed or the sweep re-notified.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.faults.harness import plan_commits, record, sized
from tests.support.faults.instruments import max_overlap
from tests.support.faults.runs import through_test_workers
from tests.support.services import require_redis

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.timeout(900),
]

COMMITS = sized(8, 50)
UPLOADS = sized(20, 100)
FINISHER_LIMIT = 3


def test_a_load_of_mixed_and_malformed_uploads_merges_once_within_the_gate_bound(
    tmp_path: Path, namespace: str
) -> None:
    client = require_redis()
    plans = plan_commits(COMMITS, UPLOADS, malformed_every=20, mixed=True, tag="load")
    runs_key = f"{namespace}:runs"
    result, elapsed = through_test_workers(
        namespace,
        tmp_path,
        plans,
        threads=8,
        timeout_s=800,
        COVWORKER_TEST_RECORD_KEY=runs_key,
        COVWORKER_FINISHER_CONCURRENCY=str(FINISHER_LIMIT),
    )
    runs = [json.loads(r) for r in client.lrange(runs_key, 0, -1)]
    client.delete(runs_key)
    finishers = max_overlap(runs, "upload_finisher")
    notifies = max_overlap(runs, "notify")

    record(
        "load",
        **result.summary(),
        faults=result.bad,
        finisher_runs=sum(1 for r in runs if r[0] == "upload_finisher"),
        max_finishers_at_once=max(finishers.values()),
        max_notify_at_once=max(notifies.values(), default=0),
        seconds=round(elapsed, 1),
    )
    result.assert_exactly_once()
    assert len(finishers) == COMMITS and max(finishers.values()) <= FINISHER_LIMIT, finishers
    assert max(notifies.values(), default=0) <= 1, notifies
