"""A merge that outlives its lock (and its gate lease): the Postgres fence keeps it exact.

Two ways a merge runs too long:

- it is slow (``merge.in_transaction=sleep``, longer than the 1 s finisher
  lock): other finishers take the expired lock and start their own merge
  while the first is still inside its transaction;
- its whole process freezes (``merge.in_transaction=stop``, SIGSTOP), with
  the gate limited to one finisher per commit: the gate heartbeat stops too,
  so the holder's lease expires, a finisher on another worker takes the
  slot, takes the expired lock and waits on the commit report's row lock
  until the frozen merge is let go (SIGCONT) and commits. Which finisher
  takes over depends on the debounce window: without one, a deferred copy
  polling the gate purges the expired lease ("Reclaimed 1 expired
  lease(s)"); with one, every finisher of the commit coalesced into the
  frozen run, so the taker is that very message, requeued by the broker once
  the frozen worker's heartbeat is stale, and by then the gate key has
  expired with its last lease (a second after it). The test asserts what
  both paths share: the frozen holder's slot is held by another worker.

Either way every upload is merged once: the merge transaction only takes
uploads the database still calls ``processed``.
"""

from __future__ import annotations

import os
import signal
from contextlib import suppress
from pathlib import Path

import pytest
import redis
import sqlalchemy as sa

from tests.support.faults.harness import (
    fresh_stack,
    join_queue,
    plan_commits,
    record,
    sized,
    upload_with_cli,
)
from tests.support.faults.tally import tally
from tests.support.private_services import wait_until
from tests.support.processes import dramatiq_workers
from tests.support.services import redis_test_url

pytestmark = [pytest.mark.e2e, pytest.mark.integration, pytest.mark.timeout(300)]

UPLOADS = sized(16, 60)
LOCK_EXPIRED = "expired during the merge"
LEASE_LOST = "expired while it ran"
#: Over ``FAST_RECOVERY``: a lock that expires under a slow merge, and several passes.
SHORT_LOCK = {"COVWORKER_FINISHER_LOCK_TIMEOUT_S": "1", "COVWORKER_MERGE_BATCH_SIZE": "4"}


def test_a_merge_slower_than_its_lock_is_overlapped_but_merges_each_upload_once(
    tmp_path: Path, namespace: str
) -> None:
    plans = plan_commits(1, UPLOADS, tag="slow")
    with fresh_stack(
        namespace, **SHORT_LOCK, COVWORKER_FAULT_POINTS="merge.in_transaction=sleep:3@1"
    ) as (db_url, env):
        upload_with_cli(env, tmp_path, plans[0])
        with dramatiq_workers(env, tmp_path / "worker.log", processes=1, threads=4):
            join_queue(redis_test_url(), namespace, timeout_s=120)
        result = tally(db_url, plans)
    output = (tmp_path / "worker.log").read_text()

    record("slow-merge-sleep", **result.summary(), faults=1)
    assert LOCK_EXPIRED in output, output[-3000:]  # the lock really expired under the merge
    result.assert_exactly_once()


def _children(pid: int) -> list[int]:
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return [int(p) for p in text.split()]


def _stopped(pid: int) -> bool:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T"


def _gate_holders(namespace: str) -> set[bytes]:
    """Every live holder token of every gate key of this test's namespace."""
    client = redis.Redis.from_url(redis_test_url())
    try:
        return {
            member
            for key in client.scan_iter(match=f"{namespace}:gate:*", count=100)
            for member in client.zrange(key, 0, -1)
            if member.startswith(b"h:")
        }
    finally:
        client.close()


def _waiting_on_a_row_lock(db_url: str) -> bool:
    engine = sa.create_engine(db_url)
    try:
        with engine.connect() as conn:
            return bool(
                conn.scalar(
                    sa.text(
                        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                        " AND wait_event_type = 'Lock'"
                    )
                )
            )
    finally:
        engine.dispose()


def _activity(db_url: str) -> list[tuple[object, ...]]:
    engine = sa.create_engine(db_url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(
                sa.text(
                    "SELECT pid, state, wait_event_type, left(query, 80) FROM pg_stat_activity"
                    " WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )
            ).all()
            return [tuple(r) for r in rows]
    finally:
        engine.dispose()


@pytest.mark.parametrize("debounce_ms", [0, 250], ids=["no-window", "window-250ms"])
def test_a_frozen_merge_loses_its_lock_and_gate_lease_yet_each_upload_merges_once(
    tmp_path: Path, namespace: str, debounce_ms: int
) -> None:
    plans = plan_commits(1, UPLOADS, tag="frozen")
    with fresh_stack(
        namespace,
        **SHORT_LOCK,
        COVWORKER_FINISHER_CONCURRENCY="1",
        COVWORKER_FINISHER_DEBOUNCE_MS=str(debounce_ms),
        # One queue: the frozen worker (4 threads) prefetches 8 of the
        # commit's uploads and leaves the rest, whose finishers find the slot
        # frozen, to the other worker. With the bulk lane it may prefetch 8
        # from each queue (all 16 at CI size), and the no-window path the
        # test names is then not taken.
        COVWORKER_PROCESSOR_SHARE="0",
    ) as (db_url, env):
        upload_with_cli(env, tmp_path, plans[0])
        frozen_env = {**env, "COVWORKER_FAULT_POINTS": "merge.in_transaction=stop@1"}
        frozen: list[int] = []
        try:
            with dramatiq_workers(frozen_env, tmp_path / "frozen.log", processes=1, threads=4) as a:
                wait_until("the worker to start", lambda: bool(_children(a.pid)), timeout_s=60)
                frozen = _children(a.pid)
                wait_until("the merge to freeze", lambda: _stopped(frozen[0]), timeout_s=60)
                frozen_holders = _gate_holders(namespace)  # the frozen merge's slot (limit 1)
                with dramatiq_workers(env, tmp_path / "other.log", processes=1, threads=4):
                    try:
                        wait_until(
                            "another finisher to wait on the frozen merge's row lock",
                            lambda: _waiting_on_a_row_lock(db_url),
                            timeout_s=60,
                        )
                    except TimeoutError as exc:
                        raise AssertionError(f"{exc}; sessions: {_activity(db_url)}") from exc
                    taken_over_by = _gate_holders(namespace)
                    os.kill(frozen[0], signal.SIGCONT)
                    join_queue(redis_test_url(), namespace, timeout_s=120)
        finally:
            for pid in frozen:  # never leave a stopped process behind
                with suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGCONT)
        result = tally(db_url, plans)
    frozen_log = (tmp_path / "frozen.log").read_text()
    other_log = (tmp_path / "other.log").read_text()

    record(f"slow-merge-frozen-debounce-{debounce_ms}ms", **result.summary(), faults=1)
    # The frozen merge held the one slot; while it was frozen its lease ran
    # out and the finisher waiting on the row lock (on the other worker) held
    # the slot instead, by whichever path the window leaves (module docstring).
    assert len(frozen_holders) == 1, frozen_holders
    assert len(taken_over_by) == 1 and not taken_over_by & frozen_holders, (
        frozen_holders,
        taken_over_by,
    )
    if debounce_ms == 0:  # a deferred copy polling the gate purges the expired lease
        assert "Reclaimed 1 expired lease(s)" in other_log, other_log[-3000:]
    assert LEASE_LOST in frozen_log, frozen_log[-3000:]  # the frozen holder learns it
    assert LOCK_EXPIRED in frozen_log, frozen_log[-3000:]
    result.assert_exactly_once()  # every upload merged once, one notification
