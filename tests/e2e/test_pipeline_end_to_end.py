"""The whole pipeline: real CLI uploads, real worker processes, real Redis and PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from app.db.models import (
    Commit,
    CommitReport,
    Notification,
    ReportUpload,
    Repository,
    Upload,
    UploadState,
)
from tests.support.brokers import BROKERS, broker_env, settle
from tests.support.faults.harness import FULL
from tests.support.processes import covworker, dramatiq_workers, service_env
from tests.support.services import fresh_database, redis_test_url, require_redis
from tests.support.synthetic import ci_matrix, expected_totals, job_hits

pytestmark = [pytest.mark.e2e, pytest.mark.integration, pytest.mark.timeout(600)]

FILES, LINES = 8, 40
BIG_COMMIT = ("acme/monorepo", "b" * 40, 0, 167)  # repo, sha, first job, uploads
#: 20 small commits at ``COVWORKER_TEST_SCALE=full``; 6 by default keeps CI short.
SMALL_COUNT = 20 if FULL else 6
SMALL_COMMITS = [
    (f"fleet/service-{i:02d}", f"{i:02x}" * 20, 1000 + 10 * i, 10) for i in range(SMALL_COUNT)
]


def write_reports(tmp: Path, first_job: int, uploads: int) -> list[Path]:
    folder = tmp / f"jobs-{first_job}"
    folder.mkdir()
    paths = []
    for name, data in ci_matrix(uploads, FILES, LINES, first_job=first_job):
        path = folder / name
        path.write_bytes(data)
        paths.append(path)
    return paths


@pytest.mark.parametrize("broker", BROKERS)
def test_a_ci_fleet_uploaded_through_the_cli_is_merged_once_and_notified_once(
    broker: str, tmp_path: Path, namespace: str
) -> None:
    require_redis()
    commits = [BIG_COMMIT, *SMALL_COMMITS]
    with fresh_database() as db_url, broker_env(broker, namespace) as chosen:
        env = service_env(redis_test_url(), db_url, namespace, **chosen)
        migrated = covworker(env, "db", "upgrade")
        assert migrated.returncode == 0, migrated.stderr
        log = tmp_path / "worker.log"
        with dramatiq_workers(env, log, processes=2, threads=4):
            for repo, sha, first_job, uploads in commits:
                files = write_reports(tmp_path, first_job, uploads)
                done = covworker(env, "upload", "--repo", repo, "--commit", sha, *map(str, files))
                assert done.returncode == 0, done.stderr
                assert f"accepted {uploads} upload(s)" in done.stdout
            settle(env, timeout_s=400)  # every message, delayed ones included

        engine = sa.create_engine(db_url)
        with engine.connect() as conn:
            for repo, sha, first_job, uploads in commits:
                commit_id = conn.scalar(
                    sa.select(Commit.id)
                    .join(Repository)
                    .where(Repository.name == repo, Commit.sha == sha)
                )
                ids = list(conn.scalars(sa.select(Upload.id).where(Upload.commit_id == commit_id)))
                states = set(
                    conn.scalars(sa.select(Upload.state).where(Upload.commit_id == commit_id))
                )
                report = conn.execute(
                    sa.select(CommitReport.totals).where(CommitReport.commit_id == commit_id)
                ).one()
                merged = list(
                    conn.scalars(
                        sa.select(ReportUpload.upload_id).where(ReportUpload.commit_id == commit_id)
                    )
                )
                notes = conn.scalar(
                    sa.select(sa.func.count()).where(Notification.commit_id == commit_id)
                )
                assert len(ids) == uploads and states == {UploadState.MERGED}, (repo, states)
                assert sorted(merged) == sorted(ids), f"{repo}: merged once each"
                expected = expected_totals(
                    [job_hits(j, FILES, LINES) for j in range(first_job, first_job + uploads)]
                )
                assert {k: report.totals[k] for k in expected} == expected, repo
                assert notes == 1, f"{repo}: {notes} notifications"
        engine.dispose()
        output = log.read_text()
        assert " ERROR " not in output and "CRITICAL" not in output, output[-5000:]
