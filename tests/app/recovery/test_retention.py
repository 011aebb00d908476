"""Retention: the sweep drops old merged and failed uploads' raw reports and
old test runs, nothing else."""

from __future__ import annotations

from datetime import timedelta

import pytest
import sqlalchemy as sa

from app.db.models import CommitReport, Upload, UploadState, utcnow
from app.queries import commit_report, commit_status
from app.recovery.retention import drop_expired_raw, drop_expired_test_results
from app.testresults.models import TestResultUpload, TestRun
from tests.support.pipeline import Pipeline
from tests.support.testresults import junit, payload, summary_of, upload_tests
from tests.support.testresults import settle as settle_tests

pytestmark = pytest.mark.timeout(60)

GOOD = b"SF:a.py\nDA:1,1\nDA:2,0\nend_of_record\n"


def merged_and_failed(pipeline: Pipeline) -> tuple[int, int, int]:
    """One merged upload and one in error, of one commit."""
    accepted = pipeline.upload([("a.info", GOOD), ("bad.xml", b"<coverage><packages>")])
    for upload_id in accepted.upload_ids:
        pipeline.process(upload_id)
    pipeline.finish(accepted.repoid, accepted.commitid)
    merged, failed = accepted.upload_ids
    return accepted.commitid, merged, failed


def raw_of(pipeline: Pipeline, upload_id: int) -> bytes:
    with pipeline.services.sessions() as session:
        return session.scalar(sa.select(Upload.raw).where(Upload.id == upload_id)) or b""


def test_the_sweep_drops_old_merged_and_failed_raw_reports_and_keeps_rows_totals_and_errors(
    pipeline: Pipeline,
) -> None:
    commitid, merged, failed = merged_and_failed(pipeline)
    services = pipeline.services
    later = utcnow() + timedelta(days=31)  # past the default 30 days

    result = pipeline.sweep(now=later)

    assert result.raw_dropped == 2  # the failed upload's too: no payload stays for ever
    assert raw_of(pipeline, merged) == b"" and raw_of(pipeline, failed) == b""
    report = commit_report(services, "acme/web", "a" * 40)
    assert report["totals"]["lines"] == 2 and report["totals"]["hits"] == 1
    status = commit_status(services, "acme/web", "a" * 40)
    by_id = {u["upload"]: u for u in status["upload_list"]}
    assert by_id[merged]["raw_dropped"] and by_id[merged]["state"] == UploadState.MERGED
    assert by_id[failed]["raw_dropped"] and by_id[failed]["state"] == UploadState.ERROR
    assert by_id[failed]["error"]  # why it failed stays
    with services.sessions() as session:
        assert session.scalar(
            sa.select(CommitReport.version).where(CommitReport.commit_id == commitid)
        )
    assert drop_expired_raw(services, later) == 0  # once only


def test_young_uploads_and_a_retention_of_zero_keep_their_raw_reports(
    pipeline: Pipeline,
) -> None:
    _, merged, failed = merged_and_failed(pipeline)
    assert drop_expired_raw(pipeline.services, utcnow() + timedelta(days=29)) == 0
    pipeline.services.settings.raw_retention_days = 0
    assert drop_expired_raw(pipeline.services, utcnow() + timedelta(days=3650)) == 0
    assert raw_of(pipeline, merged) == GOOD and raw_of(pipeline, failed) != b""


def commit_test_totals(pipeline: Pipeline, repoid: int) -> dict[str, int]:
    got = summary_of(pipeline, repoid, "a" * 40)
    assert got is not None
    return got.totals()


def test_a_commit_whose_job_was_re_run_keeps_its_test_totals_after_run_retention(
    pipeline: Pipeline,
) -> None:
    # one job run twice: test_b failed, then passed on the re-run (flaky here)
    first = upload_tests(pipeline, payload(junit(("test_a", "passed"), ("test_b", "failed"))))
    rerun = upload_tests(pipeline, payload(junit(("test_a", "passed"), ("test_b", "passed"))))
    alone = upload_tests(pipeline, payload(junit(("test_c", "skipped"))), job="py312")
    settle_tests(pipeline, first, rerun, alone)
    before = commit_test_totals(pipeline, first[0])
    assert before == {
        "passed": 2,
        "failed": 0,
        "errored": 0,
        "skipped": 1,
        "flaky": 1,
        "total": 3,
    }

    dropped = drop_expired_test_results(pipeline.services, utcnow() + timedelta(days=31))

    assert dropped == 5  # every run: test_a twice, test_b twice, test_c
    with pipeline.services.sessions() as session:
        assert session.scalar(sa.select(sa.func.count()).select_from(TestRun)) == 0
    assert commit_test_totals(pipeline, first[0]) == before
    assert drop_expired_test_results(pipeline.services, utcnow() + timedelta(days=32)) == 0
    assert commit_test_totals(pipeline, first[0]) == before


def test_a_re_runs_runs_are_dropped_with_its_jobs_newest_upload_not_before(
    pipeline: Pipeline,
) -> None:
    first = upload_tests(pipeline, payload(junit(("test_a", "failed"))))
    rerun = upload_tests(pipeline, payload(junit(("test_a", "passed"))))
    settle_tests(pipeline, first, rerun)
    with pipeline.services.sessions.begin() as session:  # the re-run came ten days later
        session.execute(
            sa.update(TestResultUpload)
            .where(TestResultUpload.upload_id == rerun[2])
            .values(created_at=utcnow() + timedelta(days=10))
        )
    before = commit_test_totals(pipeline, first[0])
    assert (before["passed"], before["failed"], before["flaky"]) == (1, 0, 1)

    # the first upload is past the retention, its re-run is not: both keep their runs
    assert drop_expired_test_results(pipeline.services, utcnow() + timedelta(days=31)) == 0
    assert commit_test_totals(pipeline, first[0]) == before
    assert drop_expired_test_results(pipeline.services, utcnow() + timedelta(days=41)) == 2
    assert commit_test_totals(pipeline, first[0]) == before
