"""Test-results uploads through the pipeline: once-only storage, unreadable
and empty uploads, retention."""

from __future__ import annotations

import gzip
from datetime import timedelta

import pytest
import sqlalchemy as sa

from app.db.models import Upload, UploadState, utcnow
from app.recovery.retention import drop_expired_test_results
from app.testresults.junit import max_test_cases
from app.testresults.models import TestDaily, TestRun
from app.testresults.summary import unreadable_uploads
from tests.support.pipeline import Pipeline
from tests.support.testresults import commit_id, junit, payload, settle, summary_of, upload_tests

pytestmark = pytest.mark.timeout(120)


def test_a_redelivered_upload_stores_its_runs_and_history_once(pipeline: Pipeline) -> None:
    up = upload_tests(pipeline, payload(junit(("test_a", "passed"), ("test_b", "failed"))))
    pipeline.process(up[2])
    with pipeline.services.sessions.begin() as session:  # as if Redis lost its intermediate
        session.execute(
            sa.update(Upload).where(Upload.id == up[2]).values(state=UploadState.PROCESSING)
        )
    pipeline.process(up[2])
    settle(pipeline, up)
    with pipeline.services.sessions() as session:
        assert session.scalar(sa.select(sa.func.count()).select_from(TestRun)) == 2
        assert session.scalar(sa.select(sa.func.sum(TestDaily.runs))) == 2


def test_an_unreadable_junit_file_fails_its_upload_only(pipeline: Pipeline) -> None:
    good = upload_tests(pipeline, payload(junit(("test_a", "passed"))))
    bad = upload_tests(pipeline, payload(b"<coverage/>"), job="py312")
    settle(pipeline, good, bad)
    with pipeline.services.sessions() as session:
        states = dict(session.execute(sa.select(Upload.id, Upload.state)).all())
        error = session.scalar(sa.select(Upload.error).where(Upload.id == bad[2]))
    assert states == {good[2]: UploadState.MERGED, bad[2]: UploadState.ERROR}
    assert error is not None and "junit-0.xml" in error and "<coverage>" in error
    with pipeline.services.sessions() as session:
        assert unreadable_uploads(session, commit_id(pipeline, "a" * 40)) == 1
    got = summary_of(pipeline, good[0], "a" * 40)
    assert got is not None and got.totals()["total"] == 1


def test_retention_drops_old_runs_and_old_days_and_keeps_the_fence(pipeline: Pipeline) -> None:
    up = upload_tests(pipeline, payload(junit(("test_a", "passed"))))
    settle(pipeline, up)
    services = pipeline.services
    assert drop_expired_test_results(services, utcnow() + timedelta(days=29)) == 0
    dropped = drop_expired_test_results(services, utcnow() + timedelta(days=91))
    assert dropped == 2  # one run, one day
    with services.sessions() as session:
        assert session.scalar(sa.select(sa.func.count()).select_from(TestRun)) == 0
        assert session.scalar(sa.select(sa.func.count()).select_from(TestDaily)) == 0
    with services.sessions.begin() as session:  # re-driven after retention: nothing comes back
        session.execute(
            sa.update(Upload).where(Upload.id == up[2]).values(state=UploadState.PROCESSING)
        )
    pipeline.process(up[2])
    with services.sessions() as session:
        assert session.scalar(sa.select(sa.func.count()).select_from(TestRun)) == 0


def test_a_run_of_no_tests_is_stored_and_an_empty_file_list_is_refused(
    pipeline: Pipeline,
) -> None:
    empty_run = upload_tests(pipeline, payload(b'<testsuite name="pytest" tests="0"/>'))
    no_file = upload_tests(pipeline, payload(), job="py312")
    settle(pipeline, empty_run, no_file)
    with pipeline.services.sessions() as session:
        states = dict(session.execute(sa.select(Upload.id, Upload.state)).all())
        error = session.scalar(sa.select(Upload.error).where(Upload.id == no_file[2]))
    assert states == {empty_run[2]: UploadState.MERGED, no_file[2]: UploadState.ERROR}
    assert error == "the test-results payload holds no JUnit file"
    got = summary_of(pipeline, empty_run[0], "a" * 40)
    assert got is not None and got.total == 0 and got.uploads == 1


def empty_cases(count: int) -> bytes:
    """A JUnit document of ``count`` distinct, empty ``<testcase/>`` elements:
    a few bytes each once compressed."""
    cases = b"".join(b'<testcase name="t%d"/>' % i for i in range(count))
    return b"<testsuite>" + cases + b"</testsuite>"


def test_the_test_cases_an_upload_may_hold_grow_with_the_bytes_it_stored(
    pipeline: Pipeline,
) -> None:
    body = gzip.compress(payload(empty_cases(60_000)))  # 8 KB: at most 20,000 + 8,000/4 cases
    bomb = upload_tests(pipeline, body)
    fine = upload_tests(pipeline, payload(empty_cases(20_000)), job="py312")  # the floor
    settle(pipeline, bomb, fine)
    limit = max_test_cases(len(body))
    assert 20_000 < limit < 60_000
    with pipeline.services.sessions() as session:
        states = dict(session.execute(sa.select(Upload.id, Upload.state)).all())
        error = session.scalar(sa.select(Upload.error).where(Upload.id == bomb[2]))
        runs = session.scalar(sa.select(sa.func.count()).select_from(TestRun))
    assert states == {bomb[2]: UploadState.ERROR, fine[2]: UploadState.MERGED}
    assert error == (
        f"test results file junit-0.xml: the JUnit XML holds more than {limit} test cases "
        f"(the limit for an upload of {len(body)} bytes)"
    )
    assert runs == 20_000  # the other upload of the commit, whole
