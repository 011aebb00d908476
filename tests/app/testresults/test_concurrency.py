"""Many test-results uploads of one commit processed at once, each delivered
twice, on real Redis and PostgreSQL: every run and every day's count once,
no deadlock between uploads that share their tests."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
import sqlalchemy as sa

from app.db.models import Upload, UploadState
from app.testresults.models import TestDaily, TestResultUpload, TestRun
from tests.support.pipeline import Pipeline
from tests.support.testresults import junit, payload, summary_of_commit, upload_tests

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

UPLOADS, TESTS, THREADS = 16, 200, 8


def test_concurrent_and_duplicate_deliveries_store_each_upload_once(
    real_pipeline: Pipeline,
) -> None:
    pipeline = real_pipeline
    # every upload is a re-run of the same job: they all report the same 200 tests
    cases = [(f"test_{i}", "failed" if i % 50 == 0 else "passed") for i in range(TESTS)]
    body = payload(junit(*cases))
    uploads = [upload_tests(pipeline, body) for _ in range(UPLOADS)]
    deliveries = [u[2] for u in uploads] * 2  # each upload delivered twice
    with ThreadPoolExecutor(THREADS) as pool:
        states = list(pool.map(pipeline.process, deliveries))  # re-raises a thread's error
    assert set(states) == {UploadState.PROCESSED}
    repoid, commitid, _ = uploads[-1]
    pipeline.finish(repoid, commitid)
    pipeline.notify(repoid, commitid)

    with pipeline.services.sessions() as session:
        assert session.scalar(sa.select(sa.func.count()).select_from(TestResultUpload)) == UPLOADS
        assert session.scalar(sa.select(sa.func.count()).select_from(TestRun)) == UPLOADS * TESTS
        runs_per_test = set(session.scalars(sa.select(TestDaily.runs)))
        assert runs_per_test == {UPLOADS}
        merged = session.scalar(
            sa.select(sa.func.count()).where(Upload.state == UploadState.MERGED)
        )
        assert merged == UPLOADS
    got = summary_of_commit(pipeline, repoid, commitid)
    assert got is not None
    assert (got.passed, got.failed, got.total) == (TESTS - TESTS // 50, TESTS // 50, TESTS)
