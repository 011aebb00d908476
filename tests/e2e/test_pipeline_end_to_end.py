"""The whole pipeline: real CLI uploads, real worker processes, real Redis and PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.brokers import BROKERS, broker_env, settle
from tests.support.faults.harness import FULL
from tests.support.faults.tally import assert_merged_once
from tests.support.processes import covworker, dramatiq_workers, migrated_database
from tests.support.synthetic import ci_matrix

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
    commits = [BIG_COMMIT, *SMALL_COMMITS]
    with (
        broker_env(broker, namespace) as chosen,
        migrated_database(namespace, **chosen) as (db_url, env),
    ):
        log = tmp_path / "worker.log"
        with dramatiq_workers(env, log, processes=2, threads=4):
            for repo, sha, first_job, uploads in commits:
                files = write_reports(tmp_path, first_job, uploads)
                done = covworker(
                    env, "upload", "--create", "--repo", repo, "--commit", sha, *map(str, files)
                )
                assert done.returncode == 0, done.stderr
                assert f"accepted {uploads} upload(s)" in done.stdout
            settle(env, timeout_s=400)  # every message, delayed ones included

        notified = assert_merged_once(db_url, commits, FILES, LINES)
        assert all(n == 1 for n in notified.values()), f"notifications: {notified}"
        output = log.read_text()
        assert " ERROR " not in output and "CRITICAL" not in output, output[-5000:]
