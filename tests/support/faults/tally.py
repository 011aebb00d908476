"""The tally of a scenario, read from PostgreSQL, the source of truth.

An upload is *lost* if it parses but is not ``merged`` (or is malformed but
not ``error``), *doubled* if its id appears more than once among the uploads its commit
report's versions added (``report_uploads``: each merge pass appends what it adds) or the
merged hits differ from the sum of each upload's own hits, or the line
totals from the independently computed expectation.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from app.coverage import Report, codec, parse_report
from app.db.models import (
    Commit,
    CommitReport,
    Notification,
    ReportUpload,
    Repository,
    Upload,
    UploadState,
)
from tests.support.faults.harness import FILES, LINES, CommitPlan, planned_uploads, report_bytes
from tests.support.synthetic import expected_totals, job_hits


@dataclass
class Tally:
    """The figures of one scenario, from PostgreSQL."""

    uploads: int = 0
    good: int = 0
    bad: int = 0
    merged: int = 0
    errored: int = 0
    lost: int = 0
    doubled: int = 0
    wrong_totals: int = 0
    errors_without_reason: int = 0
    notifications: dict[str, int] = field(default_factory=dict)
    last_notified_at: datetime | None = None

    @property
    def commits_notified_once(self) -> bool:
        return all(n == 1 for n in self.notifications.values())

    def summary(self) -> dict[str, Any]:
        return {
            "uploads": self.uploads,
            "good": self.good,
            "bad": self.bad,
            "merged": self.merged,
            "errored": self.errored,
            "lost": self.lost,
            "doubled": self.doubled,
            "wrong_totals": self.wrong_totals,
            "notifications": sum(self.notifications.values()),
            "commits": len(self.notifications),
        }

    def assert_exactly_once(self) -> None:
        """I1, I2, I6 and I7 for every planned commit."""
        assert self.lost == 0 and self.doubled == 0 and self.wrong_totals == 0, self.summary()
        assert self.merged == self.good and self.errored == self.bad, self.summary()
        assert self.errors_without_reason == 0, self.summary()
        assert self.commits_notified_once, self.notifications


def tally(db_url: str, plans: Iterable[CommitPlan]) -> Tally:
    result = Tally()
    engine = sa.create_engine(db_url)
    try:
        with engine.connect() as conn:
            for plan in plans:
                _tally_commit(conn, plan, result)
    finally:
        engine.dispose()
    return result


def hit_sum(report: Report) -> int:
    return sum(sum(fc.lines.values()) for fc in report.files.values())


def _commit_id(conn: sa.Connection, repo: str, sha: str) -> int:
    commit_id = conn.scalar(
        sa.select(Commit.id).join(Repository).where(Repository.name == repo, Commit.sha == sha)
    )
    assert commit_id is not None, f"{repo}@{sha} was never uploaded"
    return int(commit_id)


def _tally_commit(conn: sa.Connection, plan: CommitPlan, result: Tally) -> None:
    commit_id = _commit_id(conn, plan.repo, plan.sha)
    rows = conn.execute(
        sa.select(Upload.id, Upload.state, Upload.error, Upload.filename).where(
            Upload.commit_id == commit_id
        )
    ).all()
    good = [r for r in rows if not r.filename.startswith("bad-")]
    bad = [r for r in rows if r.filename.startswith("bad-")]
    assert len(good) == len(plan.jobs) and len(bad) == plan.malformed, (plan.repo, len(rows))
    result.uploads += len(rows)
    result.good += len(good)
    result.bad += len(bad)
    result.merged += sum(1 for r in good if r.state == UploadState.MERGED)
    result.lost += sum(1 for r in good if r.state != UploadState.MERGED)
    result.errored += sum(1 for r in bad if r.state == UploadState.ERROR)
    result.lost += sum(1 for r in bad if r.state != UploadState.ERROR)
    result.errors_without_reason += sum(1 for r in bad if not (r.error or "").strip())
    totals, blob = conn.execute(
        sa.select(CommitReport.totals, CommitReport.report).where(
            CommitReport.commit_id == commit_id
        )
    ).one()
    totals = json.loads(totals) if isinstance(totals, str) else totals
    ids = list(
        conn.scalars(sa.select(ReportUpload.upload_id).where(ReportUpload.commit_id == commit_id))
    )
    result.doubled += len(ids) - len(set(ids))
    expected = expected_totals([job_hits(job, FILES, LINES) for job in plan.jobs])
    # Totals only see hit or miss; the sum of hits also sees an upload added twice.
    expected_hits = sum(
        hit_sum(parse_report(report_bytes(j, mixed=plan.mixed)[1])) for j in plan.jobs
    )
    merged_hits = hit_sum(codec.load(blob)) if blob else 0
    if {k: totals.get(k) for k in expected} != expected or merged_hits != expected_hits:
        result.wrong_totals += 1
    notes = conn.execute(
        sa.select(Notification.created_at).where(Notification.commit_id == commit_id)
    ).all()
    result.notifications[f"{plan.repo}@{plan.sha[:8]}"] = len(notes)
    for (created_at,) in notes:
        if result.last_notified_at is None or created_at > result.last_notified_at:
            result.last_notified_at = created_at


def assert_merged_once(
    db_url: str, commits: Iterable[tuple[str, str, int, int]], files: int, lines: int
) -> dict[str, int]:
    """Each ``(repo, sha, first job, uploads)`` commit of ``ci_matrix`` reports
    (``files`` files of ``lines`` lines) has every upload merged, each once, into
    the totals of their hits. Returns each repository's count of notifications:
    how many there must be is the caller's to say."""
    notified = {}
    engine = sa.create_engine(db_url)
    try:
        with engine.connect() as conn:
            for repo, sha, first_job, uploads in commits:
                commit_id = _commit_id(conn, repo, sha)
                of_commit = Upload.commit_id == commit_id
                ids = sorted(conn.scalars(sa.select(Upload.id).where(of_commit)))
                states = set(conn.scalars(sa.select(Upload.state).where(of_commit)))
                merged = sorted(
                    conn.scalars(
                        sa.select(ReportUpload.upload_id).where(ReportUpload.commit_id == commit_id)
                    )
                )
                totals = conn.execute(
                    sa.select(CommitReport.totals).where(CommitReport.commit_id == commit_id)
                ).scalar_one()
                assert len(ids) == uploads and states == {UploadState.MERGED}, (repo, states)
                assert merged == ids, f"{repo}: each upload merged once"
                jobs = range(first_job, first_job + uploads)
                expected = expected_totals([job_hits(job, files, lines) for job in jobs])
                assert {k: totals[k] for k in expected} == expected, repo
                notified[repo] = int(
                    conn.scalar(
                        sa.select(sa.func.count()).where(Notification.commit_id == commit_id)
                    )
                    or 0
                )
    finally:
        engine.dispose()
    return notified


def all_settled(db_url: str, plans: list[CommitPlan]) -> bool:
    """Every planned upload is final and every commit has a notification."""
    engine = sa.create_engine(db_url)
    try:
        with engine.connect() as conn:
            pending = conn.scalar(
                sa.select(sa.func.count())
                .select_from(Upload)
                .where(Upload.state.not_in([UploadState.MERGED, UploadState.ERROR]))
            )
            total = conn.scalar(sa.select(sa.func.count()).select_from(Upload))
            notified = conn.scalar(sa.select(sa.func.count(sa.distinct(Notification.commit_id))))
    finally:
        engine.dispose()
    return pending == 0 and total == planned_uploads(plans) and notified == len(plans)


def count_uploads(db_url: str, state: str) -> int:
    engine = sa.create_engine(db_url)
    try:
        with engine.connect() as conn:
            return int(
                conn.scalar(
                    sa.select(sa.func.count()).select_from(Upload).where(Upload.state == state)
                )
                or 0
            )
    finally:
        engine.dispose()
