"""A commit's matrix does not hold another commit's uploads behind its backlog.

Real ``dramatiq app.actors`` processes on real Redis and PostgreSQL. A
matrix of 48 uploads is queued, then a commit of two, before any worker
runs; then one worker process with two threads takes them. With the
default share (8 of a commit's uploads on the shared queue at once, the
rest on the bulk queue) the small commit is parsed within the matrix's first
half; with a share of 0 (one queue, first come first parsed) after all 48.

Not after exactly eight: a thread with no shared-queue message in hand takes
a bulk one, and Dramatiq's consumer of the shared queue, once it holds its
prefetch, polls for acknowledgements with a backoff of up to the worker
timeout (1 s), so a few bulk uploads run in those gaps: 9 to 15 of the
matrix's uploads were parsed first in seven runs on an idle machine, 15 in CI.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from dramatiq.brokers.redis import RedisBroker

from app.db.models import Commit, Notification, Repository, Upload, UploadState
from app.runtime.worker import join_queues
from tests.support.pipeline import DEFAULT_QUEUES
from tests.support.processes import covworker, dramatiq_workers, migrated_database
from tests.support.services import require_redis
from tests.support.synthetic import ci_matrix

pytestmark = [pytest.mark.e2e, pytest.mark.integration, pytest.mark.timeout(240)]

MATRIX = 48
THREADS = 2
#: The most of the matrix parsed before the small commit with lanes: its
#: share, the bulk uploads the worker prefetched, those run in the consumer's
#: gaps (module docstring); with one queue it is the whole matrix.
WITHIN = MATRIX // 2


def queue_commit(env: dict[str, str], tmp_path: Path, repo: str, uploads: int) -> None:
    """``covworker upload`` of a commit of ``uploads`` reports: its processors are queued."""
    folder = tmp_path / repo.replace("/", "-")
    folder.mkdir()
    reports = []
    for name, data in ci_matrix(uploads, 6, 400):
        path = folder / name
        path.write_bytes(data)
        reports.append(str(path))
    done = covworker(env, "upload", "--create", "--repo", repo, "--commit", "e" * 40, *reports)
    assert done.returncode == 0, done.stderr


def parsed_before_the_small_commit(db_url: str) -> tuple[int, list[str], int]:
    """How many of the matrix's uploads were parsed before the small commit's
    last one; every upload's state; the notifications written."""
    engine = sa.create_engine(db_url)
    with engine.connect() as conn:
        rows = conn.execute(
            sa.select(Repository.name, Upload.processed_at, Upload.state)
            .join(Commit, Commit.id == Upload.commit_id)
            .join(Repository, Repository.id == Commit.repository_id)
        ).all()
        notes = conn.scalar(sa.select(sa.func.count()).select_from(Notification))
    engine.dispose()
    small_last = max(at for name, at, _ in rows if name == "acme/small")
    before = sum(1 for name, at, _ in rows if name == "acme/matrix" and at < small_last)
    return before, [state for _, _, state in rows], int(notes or 0)


@pytest.mark.parametrize("share", [8, 0])
def test_a_small_commit_is_parsed_beside_a_matrix_queued_before_it_not_after_it(
    tmp_path: Path, namespace: str, share: int
) -> None:
    client = require_redis()
    with migrated_database(namespace, COVWORKER_PROCESSOR_SHARE=str(share)) as (db_url, env):
        queue_commit(env, tmp_path, "acme/matrix", MATRIX)
        queue_commit(env, tmp_path, "acme/small", 2)
        with dramatiq_workers(env, tmp_path / "worker.log", processes=1, threads=THREADS):
            broker = RedisBroker(client=client, namespace=f"{namespace}-dramatiq")
            join_queues(broker, DEFAULT_QUEUES, timeout_ms=180_000)
        before, states, notes = parsed_before_the_small_commit(db_url)

    assert states == [UploadState.MERGED] * (MATRIX + 2) and notes == 2
    if share:
        assert before <= WITHIN, before
    else:
        assert before >= MATRIX - THREADS, before
