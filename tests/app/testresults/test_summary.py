"""A commit's test results (app/testresults/summary.py): each test counts
once over the commit's uploads, a retried test is flaky rather than failed."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from app.db.models import CommitFlagReport, Notification
from app.testresults.models import TestFlake
from app.testresults.summary import (
    CommitTests,
    Failure,
    commit_tests,
    settled_summary,
    unreadable_uploads,
)
from tests.support.pipeline import Pipeline
from tests.support.testresults import junit, payload, settle, summary_of, upload_tests

pytestmark = pytest.mark.timeout(120)


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


def test_a_failure_as_json_lists_its_flags_and_no_job_as_null() -> None:
    failure = Failure("test_a", "suite", "boom", flaky=True, duration=0.5, flags="unit,gpu")
    assert failure.as_json() == {
        "name": "test_a", "suite": "suite", "message": "boom", "flaky": True, "failed": True,
        "duration": 0.5, "flags": ["unit", "gpu"], "job": None, "fail_rate": None,
    }  # fmt: skip
    assert Failure("b", "s", None, False, 0.0, job="py311").as_json()["flags"] == []


def test_a_commits_total_adds_every_outcome_and_flaky_tests_count_as_passed() -> None:
    tests = CommitTests(uploads=2, passed=5, failed=1, errored=2, skipped=3, flaky=4)
    assert tests.total == 11
    assert tests.as_json() == {
        "uploads": 2,
        "totals": {
            "passed": 5, "failed": 1, "errored": 2, "skipped": 3, "flaky": 4, "total": 11,
        },
        "failures": [],
    }  # fmt: skip


def test_a_commit_without_test_results_has_no_summary(pipeline: Pipeline) -> None:
    accepted = pipeline.upload([("a.info", b"SF:a.py\nDA:1,1\nend_of_record\n")])
    with pipeline.services.sessions() as session:
        assert commit_tests(session, accepted.repoid, accepted.commitid) is None
        assert settled_summary(session, accepted.repoid, accepted.commitid) is None
        assert unreadable_uploads(session, accepted.commitid) == 0


def test_the_settled_summary_remembers_the_commits_flaky_tests(pipeline: Pipeline) -> None:
    rerun = junit(("test_net", "failed"), ("test_net", "passed"), ("test_bad", "failed"))
    up = upload_tests(pipeline, payload(rerun))
    pipeline.process(up[2])
    pipeline.finish(up[0], up[1])
    with pipeline.services.sessions.begin() as session:
        assert session.scalar(sa.select(sa.func.count()).select_from(TestFlake)) == 0
        summary = settled_summary(session, up[0], up[1])
    assert summary is not None and summary["totals"]["flaky"] == 1
    assert [(f["name"], f["failed"]) for f in summary["failures"]] == [
        ("test_bad", True), ("test_net", False),
    ]  # fmt: skip  # still failing first
    with pipeline.services.sessions() as session:
        assert session.scalar(sa.select(sa.func.count()).select_from(TestFlake)) == 1
