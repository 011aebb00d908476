"""Test-results uploads through the pipeline: per-commit totals, flaky tests
within a commit and across commits, once-only storage, retention."""

from __future__ import annotations

from datetime import timedelta

import pytest
import sqlalchemy as sa

from app.db.models import CommitFlagReport, Notification, Upload, UploadState, utcnow
from app.retention import drop_expired_test_results
from app.testresults.history import repository_tests
from app.testresults.models import TestDaily, TestRun
from app.testresults.summary import CommitTests, commit_tests, unreadable_uploads
from tests.support.pipeline import Pipeline
from tests.support.testresults import commit_id, junit, payload, settle, upload_tests

pytestmark = pytest.mark.timeout(120)


def summary_of(pipeline: Pipeline, repoid: int, sha: str) -> CommitTests | None:
    with pipeline.services.sessions() as session:
        return commit_tests(session, repoid, commit_id(pipeline, sha))


def test_a_commits_totals_count_each_test_once_over_all_its_uploads(pipeline: Pipeline) -> None:
    body = payload(
        junit(("test_adds", "passed"), ("test_divides", "failed"), ("test_gpu", "skipped")),
        junit(("test_setup", "error"), suite="tests.test_db"),
    )
    a = upload_tests(pipeline, body, job="py311")
    b = upload_tests(pipeline, body, job="py312")  # the matrix: the same tests, another job
    settle(pipeline, a, b)
    got = summary_of(pipeline, a[0], "a" * 40)
    assert got is not None and got.uploads == 2
    assert got.totals() == {
        "passed": 2, "failed": 2, "errored": 2, "skipped": 2, "flaky": 0, "total": 8,
    }  # fmt: skip
    names = sorted((f.name, f.job, f.failed, f.flaky) for f in got.failures)
    assert names == [
        ("test_divides", "py311", True, False),
        ("test_divides", "py312", True, False),
        ("test_setup", "py311", True, False),
        ("test_setup", "py312", True, False),
    ]
    divides = next(f for f in got.failures if f.name == "test_divides")
    assert divides.message == "test_divides failed: 1 != 2" and divides.suite == "tests.test_calc"
    with pipeline.services.sessions() as session:
        note = session.scalars(sa.select(Notification)).all()[-1]
        assert note.test_results is not None
        assert note.test_results["totals"]["failed"] == 2  # what the webhook carries
        # no coverage of its own: no flag report for the upload's flag
        assert session.scalar(sa.select(sa.func.count()).select_from(CommitFlagReport)) == 0


def test_a_test_retried_within_its_run_is_flaky_not_failed_twice(pipeline: Pipeline) -> None:
    rerun = junit(("test_net", "failed"), ("test_net", "failed"), ("test_net", "passed"))
    always = junit(("test_broken", "failed"), ("test_broken", "failed"))
    up = upload_tests(pipeline, payload(rerun, always))
    settle(pipeline, up)
    got = summary_of(pipeline, up[0], "a" * 40)
    assert got is not None
    assert (got.passed, got.failed, got.flaky, got.total) == (1, 1, 1, 2)
    by_name = {f.name: f for f in got.failures}
    assert (by_name["test_net"].failed, by_name["test_net"].flaky) == (False, True)
    assert (by_name["test_broken"].failed, by_name["test_broken"].flaky) == (True, False)


def test_a_test_that_failed_and_passed_on_one_commit_is_flaky_on_later_commits(
    pipeline: Pipeline,
) -> None:
    first = upload_tests(pipeline, payload(junit(("test_net", "failed"))))
    again = upload_tests(pipeline, payload(junit(("test_net", "passed"))))  # the same job re-run
    settle(pipeline, first, again)
    later = upload_tests(pipeline, payload(junit(("test_net", "failed"))), sha="b" * 40)
    settle(pipeline, later)
    got = summary_of(pipeline, later[0], "b" * 40)
    assert got is not None and got.failed == 1
    (net,) = got.failures
    assert net.failed and net.flaky  # it failed here, and is known to flake
    assert net.fail_rate == pytest.approx(2 / 3)  # 2 failures in its 3 runs


def test_a_test_that_flips_on_the_default_branch_is_flaky(pipeline: Pipeline) -> None:
    ok = upload_tests(pipeline, payload(junit(("test_clock", "passed"))), branch="main")
    settle(pipeline, ok)
    bad = upload_tests(
        pipeline, payload(junit(("test_clock", "failed"))), sha="b" * 40, branch="main"
    )
    settle(pipeline, bad)
    got = summary_of(pipeline, ok[0], "b" * 40)
    assert got is not None
    (clock,) = got.failures
    assert clock.failed and clock.flaky and clock.fail_rate == pytest.approx(0.5)
    # the same on a feature branch is a plain failure, not a flake
    feat = upload_tests(
        pipeline, payload(junit(("test_other", "passed"))), sha="c" * 40, branch="feature"
    )
    settle(pipeline, feat)
    feat2 = upload_tests(
        pipeline, payload(junit(("test_other", "failed"))), sha="d" * 40, branch="feature"
    )
    settle(pipeline, feat2)
    other = summary_of(pipeline, ok[0], "d" * 40)
    assert other is not None
    assert [(f.name, f.flaky) for f in other.failures] == [("test_other", False)]
    with pipeline.services.sessions() as session:
        page = repository_tests(session, ok[0], days=90, flake_runs=30)
    assert [t["name"] for t in page["flakiest"]] == ["test_clock"]
    assert {t["name"] for t in page["slowest"]} == {"test_clock", "test_other"}


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


def test_shards_of_one_job_add_up_read_run_by_run(pipeline: Pipeline) -> None:
    one = upload_tests(pipeline, payload(junit(("test_a", "passed"), ("test_b", "failed"))))
    two = upload_tests(pipeline, payload(junit(("test_c", "skipped"), ("test_d", "error"))))
    three = upload_tests(pipeline, payload(junit(("test_e", "passed"))), job="py312")
    settle(pipeline, one, two, three)
    got = summary_of(pipeline, one[0], "a" * 40)
    assert got is not None
    assert got.totals() == {
        "passed": 2, "failed": 1, "errored": 1, "skipped": 1, "flaky": 0, "total": 5,
    }  # fmt: skip
    assert sorted((f.name, f.failed) for f in got.failures) == [
        ("test_b", True), ("test_d", True),
    ]  # fmt: skip


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
