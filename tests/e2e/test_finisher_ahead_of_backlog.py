"""A settled commit is merged and notified ahead of a backlog of other commits' uploads.

Real ``dramatiq app.actors`` processes, real Redis and PostgreSQL. One
commit's uploads are queued first, then a backlog of slow processor messages
of other commits; only then does the worker start. The commit's last upload
sends its finisher ahead, on the finisher queue, and the finisher's notify
goes there too: the commit must be notified before the backlog's last
upload is parsed, and everything, backlog included, must end merged exactly
once with exactly one notification per commit.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
import sqlalchemy as sa
from dramatiq.brokers.redis import RedisBroker

from app.db.models import Commit, Notification, ReportUpload, Repository, Upload, UploadState
from app.runtime.worker import join_queues
from tests.support.pipeline import DEFAULT_QUEUES
from tests.support.processes import covworker, dramatiq_workers, migrated_database
from tests.support.services import require_redis
from tests.support.synthetic import ci_matrix

pytestmark = [pytest.mark.e2e, pytest.mark.integration, pytest.mark.timeout(300)]

MEASURED_UPLOADS = 4
BACKLOG_COMMITS = 4
BACKLOG_UPLOADS = 15
#: Backlog reports big enough that parsing them takes seconds on one process.
BACKLOG_FILES, BACKLOG_LINES = 100, 600


def wait_for(condition: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)  # polling a condition


def upload(env: dict[str, str], tmp_path: Path, sha: str, reports: list[tuple[str, bytes]]) -> None:
    paths = []
    for name, data in reports:
        path = tmp_path / f"{sha[:6]}-{name}"
        path.write_bytes(data)
        paths.append(str(path))
    done = covworker(env, "upload", "--create", "--repo", "acme/backlog", "--commit", sha, *paths)
    assert done.returncode == 0, done.stderr


def test_a_settled_commit_notifies_before_a_backlog_of_other_commits_is_parsed(
    tmp_path: Path, namespace: str
) -> None:
    client = require_redis()
    measured = "a" * 40
    backlog = [f"{n:x}" * 40 for n in range(1, 1 + BACKLOG_COMMITS)]
    with migrated_database(namespace) as (db_url, env):
        # Queued before any worker runs: the commit's processors, then the backlog's.
        upload(env, tmp_path, measured, ci_matrix(MEASURED_UPLOADS, 2, 10))
        for n, sha in enumerate(backlog):
            first = n * BACKLOG_UPLOADS
            reports = ci_matrix(BACKLOG_UPLOADS, BACKLOG_FILES, BACKLOG_LINES, first_job=first)
            upload(env, tmp_path, sha, reports)

        engine = sa.create_engine(db_url)

        def notified(sha: str) -> bool:
            with engine.connect() as conn:
                return bool(
                    conn.scalar(
                        sa.select(sa.func.count())
                        .select_from(Notification)
                        .join(Commit, Commit.id == Notification.commit_id)
                        .where(Commit.sha == sha)
                    )
                )

        log = tmp_path / "worker.log"
        with dramatiq_workers(env, log, processes=1, threads=2):
            wait_for(lambda: notified(measured), 120, "the commit's notification")
            broker = RedisBroker(client=client, namespace=f"{namespace}-dramatiq")
            join_queues(broker, DEFAULT_QUEUES, timeout_ms=240_000)  # the backlog too
        dead = sum(int(client.zcard(f"{namespace}-dramatiq:{q}.XQ")) for q in DEFAULT_QUEUES)

        with engine.connect() as conn:
            commits = dict(
                conn.execute(
                    sa.select(Commit.sha, Commit.id)
                    .join(Repository)
                    .where(Repository.name == "acme/backlog")
                ).all()
            )
            notified_at = conn.scalar(
                sa.select(Notification.created_at).where(
                    Notification.commit_id == commits[measured]
                )
            )
            backlog_parsed_at = conn.scalar(
                sa.select(sa.func.max(Upload.processed_at)).where(
                    Upload.commit_id.in_([commits[sha] for sha in backlog])
                )
            )
            states = dict(
                conn.execute(sa.select(Upload.state, sa.func.count()).group_by(Upload.state)).all()
            )
            merged = list(conn.scalars(sa.select(ReportUpload.upload_id)))
            notes = dict(
                conn.execute(
                    sa.select(Notification.commit_id, sa.func.count()).group_by(
                        Notification.commit_id
                    )
                ).all()
            )
        engine.dispose()

    uploads = MEASURED_UPLOADS + BACKLOG_COMMITS * BACKLOG_UPLOADS
    assert notified_at is not None and backlog_parsed_at is not None
    assert notified_at < backlog_parsed_at, (
        f"notified at {notified_at}, after the backlog's last upload was parsed "
        f"({backlog_parsed_at}): the finisher waited behind the backlog"
    )
    assert states == {UploadState.MERGED: uploads}, "0 lost"
    assert len(merged) == uploads and len(set(merged)) == uploads, "each merged exactly once"
    assert notes == {commit_id: 1 for commit_id in commits.values()}, "1 notification per commit"
    assert dead == 0
    assert " ERROR " not in log.read_text(), log.read_text()[-3000:]
