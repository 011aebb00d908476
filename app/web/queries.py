"""What the pages show, as plain dicts (the JSON API returns them as they are).

Reads PostgreSQL only (the ops view reads Redis, ``ops.py``). Nothing here
writes, so a page never holds up the pipeline.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.coverage import Totals
from app.coverage.skipped import summary_of
from app.db.bases import default_branch as repository_default_branch
from app.db.bases import settled as _settled
from app.db.models import (
    Commit,
    CommitReport,
    Notification,
    Repository,
    Upload,
    UploadState,
    is_settled,
)
from app.figures import commit_headline, commit_headlines, display_rounding, stored_totals
from app.pullrequests.numbers import DisplayRounding, shown
from app.queries import report_version
from app.web import access
from app.web.compare import compare_flags
from app.web.reports import ReportCache

#: Points of the repositories page's trend line.
SPARKLINE_POINTS = 30

#: What the uploaders tell of their CI job, shown per upload.
UPLOAD_META = ("name", "job_code", "build_code", "build_url", "ci_service", "branch", "pullid")


def _iso(at: datetime | None) -> str | None:
    return at.isoformat() if at else None


def coverage_of(totals: dict[str, Any] | None) -> float | None:
    if not totals or not totals.get("lines"):
        return None
    return float(totals["coverage"])


# -- repositories -------------------------------------------------------------


def find_repository(session: Session, name: str) -> Repository | None:
    """Names are stored lower case and compared without case, as on GitHub."""
    return session.scalar(sa.select(Repository).where(Repository.name == name.lower()))


def default_branch(session: Session, repo: Repository) -> str | None:
    """The branch the pages follow (:func:`app.db.bases.default_branch`)."""
    return repo.default_branch or repository_default_branch(session, repo.id)


def _trend(session: Session, repo: Repository) -> list[dict[str, Any]]:
    """Coverage of the latest settled commits of the default branch, oldest first."""
    branch = default_branch(session, repo)
    query = (
        sa.select(Commit.sha, CommitReport.totals, Commit.created_at)
        .join(CommitReport, CommitReport.commit_id == Commit.id)
        .where(Commit.repository_id == repo.id, _settled(session))
    )
    if branch:
        query = query.where(Commit.branch == branch)
    rows = session.execute(
        query.order_by(Commit.created_at.desc(), Commit.id.desc()).limit(SPARKLINE_POINTS)
    ).all()
    return [
        {"commit": sha, "coverage": coverage_of(totals), "at": _iso(at)}
        for sha, totals, at in reversed(rows)
    ]


def repositories(session: Session, visible: set[int] | None) -> list[dict[str, Any]]:
    """Every repository the reader may see (``visible``: private ids it holds a
    token for), with its latest settled commit and the trend."""
    out = []
    for repo in session.scalars(sa.select(Repository).order_by(Repository.name)):
        if access.is_private(repo) and (visible is None or repo.id not in visible):
            continue
        trend = _trend(session, repo)
        latest = trend[-1] if trend else None
        rounding = display_rounding(session, repo.id)
        coverage = latest["coverage"] if latest else None
        out.append(
            {
                "name": repo.name,
                "private": access.is_private(repo),
                "default_branch": default_branch(session, repo),
                "latest_commit": latest["commit"] if latest else None,
                "coverage": coverage,
                "coverage_display": shown(rounding, coverage),
                "rounding": rounding.to_json(),
                "updated_at": latest["at"] if latest else None,
                "trend": [p["coverage"] for p in trend if p["coverage"] is not None],
            }
        )
    return out


# -- commits of a repository ------------------------------------------------------


def _state(counts: dict[str, int]) -> str:
    if not is_settled(counts):
        return "pending"
    if counts.get(UploadState.ERROR, 0):
        return "errors"
    return "merged" if counts.get(UploadState.MERGED, 0) else "empty"


def _upload_counts(session: Session, commit_ids: list[int]) -> dict[int, dict[str, int]]:
    counts: dict[int, dict[str, int]] = {c: {} for c in commit_ids}
    if commit_ids:
        for commit_id, state, n in session.execute(
            sa.select(Upload.commit_id, Upload.state, sa.func.count())
            .where(Upload.commit_id.in_(commit_ids))
            .group_by(Upload.commit_id, Upload.state)
        ):
            counts[commit_id][state] = n
    return counts


def repository_commits(
    session: Session, cache: ReportCache, repo: Repository, *, limit: int = 50, offset: int = 0
) -> dict[str, Any]:
    rows = session.execute(
        sa.select(Commit, CommitReport.totals)
        .outerjoin(CommitReport, CommitReport.commit_id == Commit.id)
        .where(Commit.repository_id == repo.id)
        .order_by(Commit.created_at.desc(), Commit.id.desc())
        .limit(limit)
        .offset(offset)
    ).all()
    total = session.scalar(
        sa.select(sa.func.count()).select_from(Commit).where(Commit.repository_id == repo.id)
    )
    counts = _upload_counts(session, [c.id for c, _ in rows])
    rounding = display_rounding(session, repo.id)
    commits = []
    headlines = commit_headlines(session, [(c, stored_totals(t)) for c, t in rows], rounding)
    for (commit, _), figures in zip(rows, headlines, strict=True):
        commits.append(
            {
                "commit": commit.sha,
                "branch": commit.branch,
                "pull_request": commit.pullid,
                "created_at": _iso(commit.created_at),
                "state": _state(counts[commit.id]),
                "uploads": counts[commit.id],
                **figures.row_json(),
            }
        )
    return {
        "repository": repo.name,
        "total": total or 0,
        "offset": offset,
        "limit": limit,
        "rounding": rounding.to_json(),
        "commits": commits,
    }


def branch_coverage(
    session: Session, repo: Repository, branch: str | None
) -> tuple[float | None, DisplayRounding]:
    """The coverage of ``branch``'s newest settled commit (the default branch's
    without one; every branch's if the repository has none), and how to show
    it: what the badge draws."""
    branch = branch if branch is not None else default_branch(session, repo)
    query = (
        sa.select(CommitReport.totals)
        .join(Commit, CommitReport.commit_id == Commit.id)
        .where(Commit.repository_id == repo.id, _settled(session))
    )
    if branch is not None:
        query = query.where(Commit.branch == branch)
    totals = session.scalar(query.order_by(Commit.created_at.desc(), Commit.id.desc()).limit(1))
    return coverage_of(totals), display_rounding(session, repo.id)


def find_commit(session: Session, repo: Repository, sha: str) -> Commit | None:
    sha = sha.lower()
    found = session.scalar(
        sa.select(Commit).where(Commit.repository_id == repo.id, Commit.sha == sha)
    )
    if found is None and 7 <= len(sha) < 40:  # an abbreviated SHA, if it is unique
        matches = session.scalars(
            sa.select(Commit)
            .where(Commit.repository_id == repo.id, Commit.sha.startswith(sha, autoescape=True))
            .limit(2)
        ).all()
        found = matches[0] if len(matches) == 1 else None
    return found


# -- one commit ----------------------------------------------------------------------


def _uploads(session: Session, commit: Commit) -> list[dict[str, Any]]:
    notes = session.execute(
        sa.select(Notification.report_version, Notification.created_at)
        .where(Notification.commit_id == commit.id)
        .order_by(Notification.report_version, Notification.id)
    ).all()
    out = []
    for upload in session.scalars(
        sa.select(Upload).where(Upload.commit_id == commit.id).order_by(Upload.id)
    ):
        notified = None
        if upload.merged_version is not None:
            notified = next((at for v, at in notes if v >= upload.merged_version), None)
        out.append(
            {
                "id": upload.id,
                "filename": upload.filename,
                "flags": list(upload.flags or []),
                "state": upload.state,
                "format": upload.report_format,
                "size": upload.raw_size,
                "error": upload.error,
                "skipped": summary_of(upload.skipped_records),
                "job": {name: getattr(upload, name) for name in UPLOAD_META},
                "timing": {
                    "uploaded": _iso(upload.created_at),
                    "processed": _iso(upload.processed_at),
                    "merged": _iso(upload.merged_at),
                    "notified": _iso(notified),
                },
            }
        )
    return out


def commit_page(
    session: Session,
    cache: ReportCache,
    repo: Repository,
    commit: Commit,
    **table: Any,
) -> dict[str, Any]:
    version = report_version(session, commit.id)
    figures = commit_headline(session, commit)
    base = figures.base
    base_flags: dict[str, Totals] = {}
    base_version = 0
    if base is not None:
        base_version = report_version(session, base.id)
        base_flags = cache.flag_totals(session, base.id, base_version)
    prepared = cache.table(
        session, commit.id, version, None if base is None else base.id, base_version
    )
    flags = cache.flag_totals(session, commit.id, version)
    flag_changes = compare_flags(base_flags, flags)
    comparison = prepared.comparison
    counts = _upload_counts(session, [commit.id])[commit.id]
    shown_json = figures.to_json()
    head_totals: dict[str, Any] = dict(prepared.totals.to_dict())
    head_totals["coverage_display"] = (
        shown_json["coverage_display"] if head_totals["lines"] else None
    )
    return {
        "repository": repo.name,
        "commit": commit.sha,
        "branch": commit.branch,
        "pull_request": commit.pullid,
        "created_at": _iso(commit.created_at),
        "report_version": version,
        "state": _state(counts),
        "rounding": shown_json["rounding"],
        "totals": head_totals,
        "base": {
            "commit": base.sha if base is not None else None,
            "totals": comparison["base"],
            "change": comparison["change"],
            "change_display": shown_json["change_display"],
            "files_changed": comparison["files_changed"],
            "top_files": comparison["top_files"],
        },
        "flags": [
            {"flag": flag, **totals.to_dict(), "change": flag_changes[flag]["change"]}
            for flag, totals in flags.items()
        ],
        "uploads": _uploads(session, commit),
        "table": prepared.page(**table),
    }
