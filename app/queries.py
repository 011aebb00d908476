"""Read-only views of a commit: what ``covworker status`` and ``report`` print."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from app.coverage import Report
from app.db.models import (
    Commit,
    CommitReport,
    Notification,
    Upload,
    UploadState,
    merged_upload_ids,
)
from app.pipeline.uploads import find_commit, validate_repo, validate_sha
from app.services import Services


def _commit(services: Services, repo: str, sha: str) -> Commit | None:
    with services.sessions() as session:
        return find_commit(session, validate_repo(repo), validate_sha(sha))


def commit_status(services: Services, repo: str, sha: str) -> dict[str, Any] | None:
    """Uploads by state, errors, report version, notifications, Redis progress."""
    commit = _commit(services, repo, sha)
    if commit is None:
        return None
    with services.sessions() as session:
        by_state = dict(
            session.execute(
                sa.select(Upload.state, sa.func.count())
                .where(Upload.commit_id == commit.id)
                .group_by(Upload.state)
            ).all()
        )
        errors = session.execute(
            sa.select(Upload.id, Upload.filename, Upload.error)
            .where(Upload.commit_id == commit.id, Upload.state == UploadState.ERROR)
            .order_by(Upload.id)
        ).all()
        version = session.scalar(
            sa.select(CommitReport.version).where(CommitReport.commit_id == commit.id)
        )
        notifications = session.execute(
            sa.select(
                Notification.report_version,
                Notification.created_at,
                Notification.webhook_url,
                Notification.webhook_attempts,
                Notification.webhook_delivered_at,
                Notification.webhook_failed_at,
                Notification.webhook_error,
            )
            .where(Notification.commit_id == commit.id)
            .order_by(Notification.report_version)
        ).all()
    processing, processed = services.state.counts(commit.repository_id, commit.id)
    return {
        "repository": repo,
        "commit": commit.sha,
        "repoid": commit.repository_id,
        "commitid": commit.id,
        "uploads": {s.value: by_state.get(s.value, 0) for s in UploadState},
        "errors": [{"upload": e[0], "file": e[1], "error": e[2]} for e in errors],
        "report_version": version or 0,
        "notifications": [
            {"report_version": n[0], "at": n[1].isoformat(), "webhook": _webhook(n)}
            for n in notifications
        ],
        "redis": {"processing": processing, "processed": processed},
        "finisher": services.state.stats(commit.repository_id, commit.id),
    }


def _webhook(note: Any) -> dict[str, Any] | None:
    """A notification's webhook delivery: state, attempts, last error."""
    if not note.webhook_url:
        return None
    state = (
        "delivered"
        if note.webhook_delivered_at
        else "failed"
        if note.webhook_failed_at
        else "pending"
    )
    return {"state": state, "attempts": note.webhook_attempts, "error": note.webhook_error}


def commit_report(services: Services, repo: str, sha: str) -> dict[str, Any] | None:
    """The merged report: totals, per-file totals, the uploads it holds."""
    commit = _commit(services, repo, sha)
    if commit is None:
        return None
    with services.sessions() as session:
        row = session.execute(
            sa.select(CommitReport.version, CommitReport.report).where(
                CommitReport.commit_id == commit.id
            )
        ).first()
        upload_ids = merged_upload_ids(session, commit.id)
    version, blob = row if row else (0, None)
    report = Report.from_bytes(blob) if blob else Report()
    return {
        "repository": repo,
        "commit": commit.sha,
        "version": version,
        "upload_ids": list(upload_ids),
        **report.to_json(),
    }
