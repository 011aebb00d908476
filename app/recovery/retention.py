"""Retention of raw reports: merged uploads older than
``COVWORKER_RAW_RETENTION_DAYS`` lose their raw bytes; the row, its state,
format and flags, and the merged coverage stay. Such an upload cannot be
re-processed any more (``status`` shows it as ``raw_dropped``). Uploads in
error keep their bytes as long (counted from when they failed), so the
report that failed can be examined meanwhile; then they lose them too, so
no payload, however large, stays in the database or the object store
for ever.

The raw bytes are wherever the payload was stored: the row, its chunk rows,
or its object in the object store (deleted before the rows are marked, so
a store that is down leaves the uploads for the next sweep, not objects
nothing points to).

Merged reports are never dropped here: a commit keeps one report, the
latest version. The file page's stored windows of a version
(``report_file_lines``, ``app.merge.file_lines``) are deleted by the merge pass
that writes the next version, in its transaction, so each commit holds
the windows of its current version only and nothing is left to sweep.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import sqlalchemy as sa
from sqlalchemy.orm import Session, aliased

from app.db.models import Upload, UploadChunk, UploadState, utcnow
from app.runtime.services import Services
from app.storage import StorageUnavailable, taken_key

#: Most uploads whose raw bytes one sweep drops (the next sweep goes on).
RETENTION_BATCH = 1000


def drop_expired_raw(services: Services, now: datetime | None = None) -> int:
    """Drop the raw bytes of merged and failed uploads older than the retention; how many."""
    days = services.settings.raw_retention_days
    if days <= 0:
        return 0
    now = now or utcnow()
    cutoff = now - timedelta(days=days)
    with services.sessions.begin() as session:
        expired = session.execute(
            sa.select(Upload.id, Upload.storage_path)
            .where(
                sa.or_(
                    sa.and_(Upload.state == UploadState.MERGED, Upload.merged_at <= cutoff),
                    sa.and_(Upload.state == UploadState.ERROR, Upload.updated_at <= cutoff),
                ),
                Upload.raw_dropped_at.is_(None),
            )
            .order_by(Upload.id)
            .limit(RETENTION_BATCH)
        ).all()
        ids = [row[0] for row in expired]
        # the object, and the copy the processor read (app.storage.take_object)
        keys = [key for row in expired if row[1] for key in (row[1], taken_key(row[1]))]
        if keys:
            if services.payload_store is None:
                raise StorageUnavailable(
                    "merged payloads are in an object store: set COVWORKER_STORAGE=s3"
                )
            services.payload_store.delete(keys)
        session.execute(sa.delete(UploadChunk).where(UploadChunk.upload_id.in_(ids)))
        result = session.execute(
            sa.update(Upload)
            .where(Upload.id.in_(ids), Upload.state.in_([UploadState.MERGED, UploadState.ERROR]))
            .values(raw=b"", raw_dropped_at=now)
            .execution_options(synchronize_session=False)
        )
        dropped = int(result.rowcount)  # type: ignore[attr-defined]
    if dropped:
        services.metrics.dropped_raw(dropped)
    return dropped


def drop_expired_test_results(services: Services, now: datetime | None = None) -> int:
    """Drop test runs of uploads older than ``testresults_runs_retention_days``
    and daily history older than ``testresults_history_days``; rows dropped.

    The per-upload row stays, with its counts (the commit keeps its totals,
    and the row is the once-only fence: a re-driven upload must not store its
    runs again); so does each test's identity. Uploads of one commit that
    share their flags and job (a re-run) are counted together, test by test,
    from their runs: their runs are dropped together, once the newest of them
    is past the retention, after their counts are folded into one
    (:func:`_fold_counts`).
    """
    from app.testresults.models import TestDaily, TestFlake

    settings, now = services.settings, now or utcnow()
    dropped = 0
    with services.sessions.begin() as session:
        if settings.testresults_runs_retention_days > 0:
            cutoff = now - timedelta(days=settings.testresults_runs_retention_days)
            dropped += _drop_expired_runs(session, cutoff, now)
        if settings.testresults_history_days > 0:
            since = (now - timedelta(days=settings.testresults_history_days)).date()
            for table, old in (
                (TestDaily, TestDaily.day < since),
                (
                    TestFlake,
                    TestFlake.created_at < now - timedelta(days=settings.testresults_history_days),
                ),
            ):
                result = session.execute(sa.delete(table).where(old))
                dropped += int(result.rowcount)  # type: ignore[attr-defined]
    return dropped


def _drop_expired_runs(session: Session, cutoff: datetime, now: datetime) -> int:
    """Drop the runs of up to ``RETENTION_BATCH`` expired uploads, whole groups
    of a commit's uploads with the same flags and job at a time; rows dropped."""
    from app.testresults.models import TestResultUpload, TestRun

    sibling = aliased(TestResultUpload)
    younger = (
        sa.exists()
        .where(
            sibling.commit_id == TestResultUpload.commit_id,
            sibling.identity == TestResultUpload.identity,
            sibling.created_at > cutoff,
        )
        .correlate(TestResultUpload)
    )
    groups = {
        (row.commit_id, row.identity)
        for row in session.execute(
            sa.select(TestResultUpload.commit_id, TestResultUpload.identity)
            .where(
                TestResultUpload.created_at <= cutoff,
                TestResultUpload.runs_dropped_at.is_(None),
                ~younger,
            )
            .order_by(TestResultUpload.upload_id)
            .limit(RETENTION_BATCH)
        )
    }
    dropped = 0
    for commit_id, identity in sorted(groups):
        members = session.execute(
            sa.select(TestResultUpload.upload_id, TestResultUpload.runs_dropped_at)
            .where(TestResultUpload.commit_id == commit_id, TestResultUpload.identity == identity)
            .order_by(TestResultUpload.upload_id)
        ).all()
        ids = [row.upload_id for row in members if row.runs_dropped_at is None]
        if len(ids) > 1:
            _fold_counts(session, ids)
        result = session.execute(sa.delete(TestRun).where(TestRun.upload_id.in_(ids)))
        dropped += int(result.rowcount)  # type: ignore[attr-defined]
        session.execute(
            sa.update(TestResultUpload)
            .where(TestResultUpload.upload_id.in_(ids))
            .values(runs_dropped_at=now)
        )
    return dropped


def _fold_counts(session: Session, upload_ids: list[int]) -> None:
    """Before their runs go: the counts of uploads that share flags and job,
    each test once (``shared_counts``), on the first of them, zero on the
    others, so their sum stays the commit's count."""
    from app.testresults.models import TestResultUpload
    from app.testresults.summary import shared_counts

    passed, failed, errored, skipped, flaky = shared_counts(session, upload_ids)
    first, *others = upload_ids
    session.execute(
        sa.update(TestResultUpload)
        .where(TestResultUpload.upload_id == first)
        .values(passed=passed, failed=failed, errored=errored, skipped=skipped, flaky=flaky)
    )
    if others:
        session.execute(
            sa.update(TestResultUpload)
            .where(TestResultUpload.upload_id.in_(others))
            .values(passed=0, failed=0, errored=0, skipped=0, flaky=0)
        )
