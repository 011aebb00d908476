"""Read-only views of a commit: what ``covworker status``, ``report`` and
``commits`` print, and the change against its base that the notifier sends.

A commit is named by its repository (compared case-insensitively, as on
GitHub) and its SHA or any unique prefix of it (at least 7 hex digits).

The pages (``app/web/``) read through these too (the report version, the
per-flag totals); nothing here imports the web layer, so the pipeline can
use it.
"""

from __future__ import annotations

import logging
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.coverage import Report, Totals, codec
from app.coverage.skipped import summary_of
from app.db.bases import find_base
from app.db.models import (
    Commit,
    CommitFlagReport,
    CommitReport,
    Notification,
    Repository,
    Upload,
    UploadState,
    merged_upload_ids,
)
from app.db.pull_deliveries import commit_feedback
from app.errors import AmbiguousCommit, CommitNotFound
from app.figures import commit_headline, display_rounding, stored_totals
from app.ingest.accept import validate_repo, validate_sha
from app.merge.carryforward import carried_flags
from app.merge.report_summary import load_file_totals, stored_comparison
from app.pullrequests.cached_totals import compare_flags, compare_totals
from app.pullrequests.numbers import shown
from app.runtime.services import Services

logger = logging.getLogger(__name__)

#: Most candidates an ambiguous prefix lists.
MAX_CANDIDATES = 10
#: Files named in a notification's comparison.
TOP_FILES = 10
#: The counts a commit's per-flag totals hold (``CommitFlagReport.totals``);
#: totals stored before ``branches`` was counted read it as 0.
_TOTALS_FIELDS = ("files", "lines", "hits", "misses", "partials", "branches")


def report_version(session: Session, commit_id: int) -> int:
    """The version of the commit's merged report (0: nothing merged yet)."""
    return (
        session.scalar(sa.select(CommitReport.version).where(CommitReport.commit_id == commit_id))
        or 0
    )


def flag_totals(session: Session, commit_id: int) -> dict[str, Totals]:
    """Per flag, the totals of the merged uploads carrying it.

    The finisher keeps one merged report per flag, in the transaction of
    each merge pass (``app/merge/flag_reports.py``), with its totals.
    """
    rows = session.execute(
        sa.select(CommitFlagReport.flag, CommitFlagReport.totals)
        .where(CommitFlagReport.commit_id == commit_id)
        .order_by(CommitFlagReport.flag)
    ).all()
    return {
        flag: Totals(**{k: int(totals.get(k, 0)) for k in _TOTALS_FIELDS}) for flag, totals in rows
    }


def commit_delta(session: Session, commit: Commit) -> dict[str, Any]:
    """The change of a settled ``commit`` against its base, as the notifier
    stores it on the notification row and sends it in the webhook body: the
    total change, per-flag changes and the files whose coverage changed most
    (JSON-serialisable).

    A merged report that cannot be read (``ValueError`` from the loader)
    must not hold up the notification: the comparison then says why it is
    missing instead.
    """
    try:
        return _commit_delta(session, commit)
    except ValueError as exc:
        logger.warning("No comparison for commit %s: %s", commit.id, exc)
        return {"base_commit": None, "change": None, "error": str(exc)[:500]}


def _commit_delta(session: Session, commit: Commit) -> dict[str, Any]:
    base = find_base(session, commit)
    # The merge pass stored this comparison if it found the same base then
    # (app/merge/report_summary.py); the pages read the same one.
    base_version = report_version(session, base.id) if base is not None else 0
    stored = stored_comparison(
        session,
        commit.id,
        report_version(session, commit.id),
        base.id if base is not None else None,
        base_version,
    )
    if stored is not None and len(stored.get("top_files", ())) <= TOP_FILES:
        result = dict(stored)
    else:
        head = load_file_totals(session, commit.id)
        base_files = load_file_totals(session, base.id) if base is not None else None
        result = compare_totals(base_files, head, top=TOP_FILES)
    result["base_commit"] = base.sha if base is not None else None
    head_flags = flag_totals(session, commit.id)
    base_flags = flag_totals(session, base.id) if base is not None else {}
    result["flags"] = compare_flags(base_flags, head_flags, carried_flags(session, commit.id))
    return result


def current_delta(
    session: Session, commit: Commit, stored: dict[str, Any] | None
) -> dict[str, Any]:
    """A notification's comparison (``stored``, :func:`commit_delta` when it was
    written) as it stands now: kept while its base is still the commit's base,
    recomputed when :func:`app.db.bases.find_base` names another (the commit's
    pull request was read from the provider after the notification: feedback
    runs after it, so the first push of a pull request is notified before
    covworker knows its base)."""
    base = find_base(session, commit)
    if (
        isinstance(stored, dict)
        and "error" not in stored
        and stored.get("base_commit") == (base.sha if base is not None else None)
    ):
        return stored
    return commit_delta(session, commit)


def resolve_commit(session: Session, repo: str, sha: str) -> Commit:
    """The commit of ``repo`` whose SHA is ``sha`` or starts with it."""
    name, prefix = validate_repo(repo), validate_sha(sha)
    rows = session.scalars(
        sa.select(Commit)
        .join(Repository)
        .where(sa.func.lower(Repository.name) == name, Commit.sha.startswith(prefix))
        .order_by(Commit.sha)
        .limit(MAX_CANDIDATES + 1)
    ).all()
    exact = [c for c in rows if c.sha == prefix]
    if exact:
        return exact[0]
    if not rows:
        raise CommitNotFound(f"commit {sha} of {name} is unknown: nothing was uploaded for it")
    if len(rows) > 1:
        raise AmbiguousCommit(sha, [c.sha for c in rows[:MAX_CANDIDATES]])
    return rows[0]


def _commit(services: Services, repo: str, sha: str) -> tuple[Commit, str]:
    with services.sessions() as session:
        commit = resolve_commit(session, repo, sha)
        name = session.scalar(
            sa.select(Repository.name).where(Repository.id == commit.repository_id)
        )
    return commit, name or repo


def totals_json(totals: Totals) -> dict[str, Any]:
    """Totals as users see them: no percentage for a file without lines."""
    data: dict[str, Any] = dict(totals.to_dict())
    if not totals.lines:
        data["coverage"] = None
    return data


def report_json(report: Report) -> dict[str, Any]:
    files = {}
    for path, t in report.file_totals().items():
        data = totals_json(t)
        del data["files"]
        files[path] = data
    return {"totals": totals_json(report.totals()), "files": files}


def uploads_by_state(session: Session, commitid: int) -> dict[str, int]:
    """How many uploads of the commit are in each state it has uploads in."""
    counted = session.execute(
        sa.select(Upload.state, sa.func.count())
        .where(Upload.commit_id == commitid)
        .group_by(Upload.state)
    )
    return {state: count for state, count in counted}


def upload_states(services: Services, commitid: int) -> dict[str, int]:
    """How many uploads of the commit are in each state (every state listed)."""
    with services.sessions() as session:
        by_state = uploads_by_state(session, commitid)
    return {s.value: by_state.get(s.value, 0) for s in UploadState}


def _uploads(session: Session, commitid: int) -> list[dict[str, Any]]:
    rows = session.execute(
        sa.select(
            Upload.id,
            Upload.filename,
            Upload.state,
            Upload.report_format,
            Upload.flags,
            Upload.error,
            Upload.raw_dropped_at,
            Upload.warnings,
            Upload.skipped_records,
        )
        .where(Upload.commit_id == commitid)
        .order_by(Upload.id)
    ).all()
    return [
        {
            "upload": r[0],
            "file": r[1],
            "state": r[2],
            "format": r[3],
            "flags": list(r[4] or []),
            "error": r[5],
            "raw_dropped": r[6] is not None,
            "warnings": list(r[7] or []),
            "skipped": summary_of(r[8]),
        }
        for r in rows
    ]


def _flag_totals(session: Session, commitid: int) -> dict[str, dict[str, Any]]:
    rows = session.execute(
        sa.select(
            CommitFlagReport.flag,
            CommitFlagReport.totals,
            CommitFlagReport.uploads,
            CommitFlagReport.carried_from,
        )
        .where(CommitFlagReport.commit_id == commitid)
        .order_by(CommitFlagReport.flag)
    ).all()
    flags = {}
    for flag, totals, uploads, carried_from in rows:
        data: dict[str, Any] = dict(totals)
        if not data.get("lines"):
            data["coverage"] = None
        # carried_from: the ancestor sha a carried-forward flag came from (None: uploaded)
        flags[flag] = {**data, "uploads": uploads, "carried_from": carried_from}
    return flags


def commit_status(services: Services, repo: str, sha: str) -> dict[str, Any]:
    """Uploads by state, each upload (flags, error), per-flag totals, report
    version, notifications, Redis progress."""
    commit, name = _commit(services, repo, sha)
    with services.sessions() as session:
        uploads = _uploads(session, commit.id)
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
            .order_by(Notification.report_version, Notification.id)
        ).all()
        flags = _flag_totals(session, commit.id)
        pull_request = commit_feedback(session, commit.id)
        figures = commit_headline(session, commit)
    processing, processed = services.state.counts(commit.repository_id, commit.id)
    return {
        "repository": name,
        "commit": commit.sha,
        "repoid": commit.repository_id,
        "commitid": commit.id,
        "uploads": upload_states(services, commit.id),
        "upload_list": uploads,
        "errors": [
            {"upload": u["upload"], "file": u["file"], "error": u["error"]}
            for u in uploads
            if u["state"] == UploadState.ERROR
        ],
        "flags": flags,
        "report_version": version or 0,
        # Coverage, base and change as every surface shows them (app/figures.py).
        **figures.to_json(),
        "notifications": [
            {"report_version": n[0], "at": n[1].isoformat(), "webhook": _webhook(n)}
            for n in notifications
        ],
        "redis": {"processing": processing, "processed": processed},
        "finisher": services.state.stats(commit.repository_id, commit.id),
        # Pull-request feedback of the newest version (app/feedback/delivery.py).
        "pull_request": pull_request,
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


def commit_report(
    services: Services, repo: str, sha: str, *, flag: str | None = None
) -> dict[str, Any]:
    """The merged report (or one flag's): totals, per-file totals, the uploads
    it holds, and the uploads that failed."""
    commit, name = _commit(services, repo, sha)
    with services.sessions() as session:
        row = session.execute(
            sa.select(CommitReport.version, CommitReport.report).where(
                CommitReport.commit_id == commit.id
            )
        ).first()
        version, blob = row if row else (0, None)
        upload_ids = merged_upload_ids(session, commit.id)
        flags = _flag_totals(session, commit.id)
        if flag is not None:
            blob = session.scalar(
                sa.select(CommitFlagReport.report).where(
                    CommitFlagReport.commit_id == commit.id, CommitFlagReport.flag == flag
                )
            )
        uploads = _uploads(session, commit.id)
        rounding = display_rounding(session, commit.repository_id)
        figures = commit_headline(session, commit, rounding=rounding)
    report = codec.load(blob) if blob else Report()
    if flag is not None:
        upload_ids = [u["upload"] for u in uploads if flag in u["flags"]]
    shown_report = report_json(report)
    totals = shown_report["totals"]
    totals["coverage_display"] = shown(rounding, totals["coverage"])
    compared = {k: v for k, v in figures.to_json().items() if k.startswith(("base_", "change"))}
    return {
        "repository": name,
        "commit": commit.sha,
        "version": version,
        "flag": flag,
        "upload_ids": list(upload_ids),
        "uploads": upload_states(services, commit.id),
        "errors": [
            {"upload": u["upload"], "file": u["file"], "error": u["error"]}
            for u in uploads
            if u["state"] == UploadState.ERROR and (flag is None or flag in u["flags"])
        ],
        "flags": flags,
        **shown_report,
        # The whole commit's base and change (app/figures.py), also with --flag.
        **compared,
        "rounding": rounding.to_json(),
    }


def repository_commits(services: Services, repo: str, *, limit: int = 100) -> dict[str, Any]:
    """The repository's latest commits: SHA, uploads by state, coverage."""
    name = validate_repo(repo)
    with services.sessions() as session:
        repository = session.scalar(
            sa.select(Repository).where(sa.func.lower(Repository.name) == name)
        )
        if repository is None:
            raise CommitNotFound(f"repository {repo} is unknown: nothing was uploaded for it")
        rows = session.execute(
            sa.select(Commit, CommitReport.totals)
            .outerjoin(CommitReport, CommitReport.commit_id == Commit.id)
            .where(Commit.repository_id == repository.id)
            .order_by(Commit.created_at.desc(), Commit.id.desc())
            .limit(limit)
        ).all()
        counts: dict[int, dict[str, int]] = {}
        if rows:
            for commit_id, state, n in session.execute(
                sa.select(Upload.commit_id, Upload.state, sa.func.count())
                .where(Upload.commit_id.in_([c.id for c, _ in rows]))
                .group_by(Upload.commit_id, Upload.state)
            ).all():
                counts.setdefault(commit_id, {})[state] = n
        rounding = display_rounding(session, repository.id)
        commits = [
            {
                "commit": commit.sha,
                "created_at": commit.created_at.isoformat(),
                "uploads": {
                    s.value: counts.get(commit.id, {}).get(s.value, 0) for s in UploadState
                },
                **commit_headline(
                    session, commit, rounding=rounding, head=stored_totals(totals)
                ).row_json(),
            }
            for commit, totals in rows
        ]
    return {"repository": repository.name, "rounding": rounding.to_json(), "commits": commits}
