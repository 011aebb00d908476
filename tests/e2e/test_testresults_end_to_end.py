"""Test results end to end: the real ``codecovcli upload-process
--report-type test_results`` against a real ``covworker serve`` and real
``dramatiq app.actors`` workers on real Redis and PostgreSQL.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.db.models import Commit, Notification, Upload, UploadState
from app.testresults.comment import tests_section
from app.testresults.summary import commit_tests
from tests.support.brokers import settle
from tests.support.paths import JUNIT
from tests.support.processes import add_repo, covworker_serve, dramatiq_workers, migrated_database
from tests.support.uploaders import codecovcli, first_commit, uploader_env

pytestmark = [pytest.mark.e2e, pytest.mark.integration, pytest.mark.timeout(600)]

FIXTURES = JUNIT
#: The same job re-run on the same commit: test_divides, failed in pytest.xml, passes now.
RERUN = b"""<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" tests="1">
<testcase classname="test_sample" name="test_divides" time="0.002"/></testsuite></testsuites>"""


def checkout(tmp: Path) -> tuple[Path, str]:
    repo = tmp / "checkout"
    repo.mkdir()
    shutil.copy(FIXTURES / "pytest.xml", repo / "junit.xml")
    (repo / "rerun-junit.xml").write_bytes(RERUN)
    return repo, first_commit(repo, ["junit.xml"], "tests")


def test_codecovcli_test_results_show_failures_skips_and_a_flaky_test_on_the_commit(
    tmp_path: Path, namespace: str
) -> None:
    repo_dir, sha = checkout(tmp_path)
    with migrated_database(namespace, COVWORKER_UPLOAD_URL_SECRET="e2e-secret") as (db_url, env):
        token = add_repo(env, "acme/calc")
        clients = uploader_env(env)
        common = ["--report-type", "test_results", "-t", token, "-r", "acme/calc", "-C", sha]
        common += ["-B", "feature", "-F", "unit", "-n", "py311"]

        with (
            dramatiq_workers(env, tmp_path / "worker.log", processes=2, threads=2),
            covworker_serve(env, tmp_path / "api.log", workers=1) as served,
        ):
            base = served.url
            first = codecovcli(
                clients, repo_dir, base, "upload-process", *common, "-f", "junit.xml"
            )
            assert first.returncode == 0, first.stdout + first.stderr
            settle(env, 300)
            with httpx.Client(timeout=30) as http:
                url = f"{base}/api/v1/repos/acme/calc/commits/{sha}/tests"
                before = http.get(url).json()
            # the job is re-run: test_divides passes this time
            rerun = codecovcli(
                clients, repo_dir, base, "upload-process", *common, "-f", "rerun-junit.xml"
            )
            assert rerun.returncode == 0, rerun.stdout + rerun.stderr
            # a job that found no JUnit file: Codecov's 201, nothing stored
            none = codecovcli(clients, repo_dir, base, "upload-process", *common)
            assert none.returncode == 0, none.stdout + none.stderr
            assert "No test results reports found" in none.stdout + none.stderr
            settle(env, 300)
            with httpx.Client(timeout=30) as http:
                after = http.get(url)
                page = http.get(f"{base}/acme/calc/commit/{sha}")
                tests_page = http.get(f"{base}/-/tests/acme/calc")
                unknown = http.get(f"{base}/api/v1/repos/acme/calc/commits/{'d' * 40}/tests")

        assert before["totals"] == {
            "passed": 5, "failed": 3, "errored": 1, "skipped": 2, "flaky": 0, "total": 11,
        }  # fmt: skip
        assert after.status_code == 200, after.text
        body = after.json()
        # test_divides failed, then passed on the same commit: flaky, counted as passed
        assert body["totals"] == {
            "passed": 6, "failed": 2, "errored": 1, "skipped": 2, "flaky": 1, "total": 11,
        }  # fmt: skip
        failures = {f["name"]: f for f in body["failures"]}
        assert failures["test_divides"]["flaky"] is True
        assert failures["test_divides"]["failed"] is False
        markup = failures["test_compares_markup"]
        assert (markup["suite"], markup["flaky"], markup["failed"]) == ("test_sample", False, True)
        assert 'assert "<b>a & b</b>" == "<i>a | b</i>"' in markup["message"]
        assert failures["test_uses_broken_fixture"]["failed"] is True  # the error
        assert set(failures) == {
            "test_divides", "test_compares_markup", "test_split", "test_uses_broken_fixture",
        }  # fmt: skip
        assert unknown.status_code == 404

        assert page.status_code == 200
        assert 'data-tests="failed">2<' in page.text and 'data-tests="skipped">2<' in page.text
        assert "&lt;b&gt;a &amp; b&lt;/b&gt;" in page.text  # the message, escaped
        assert "<b>a & b</b>" not in page.text
        assert tests_page.status_code == 200 and "test_divides" in tests_page.text

        engine = sa.create_engine(db_url)
        try:
            with Session(engine) as session:
                commit = session.scalars(sa.select(Commit).where(Commit.sha == sha)).one()
                states = session.scalars(
                    sa.select(Upload.state).where(Upload.commit_id == commit.id)
                ).all()
                assert states == [UploadState.MERGED, UploadState.MERGED]  # none for no file
                notes = session.scalars(
                    sa.select(Notification)
                    .where(Notification.commit_id == commit.id)
                    .order_by(Notification.report_version)
                ).all()
                # what the webhook body carries: the settled commit's test totals
                assert notes[-1].test_results is not None
                assert notes[-1].test_results["totals"]["flaky"] == 1
                assert notes[0].test_results is not None
                assert notes[0].test_results["totals"]["failed"] == 3
                section = tests_section(commit_tests(session, commit.repository_id, commit.id))
        finally:
            engine.dispose()
        assert section is not None
        assert section.startswith("### :x: 3 Tests Failed:")  # 2 failed + 1 errored
        assert "test_sample test_compares_markup (py311)" in section
        assert "View the full list of 1 :snowflake: flaky tests" not in section  # passed now
