"""The change of a settled commit against its base, for its notification.

``commit_delta`` is what the notifier stores on the notification row and
sends in the webhook body: the total change, per-flag changes and the files
whose coverage changed most (``compare``). Per-flag totals are rebuilt from
the flagged uploads' raw reports, so they are skipped (``flags`` is None,
``flags_skipped`` says why) when a commit has more flagged uploads than
``FLAG_UPLOADS_MAX``: the notification must not wait on re-parsing a whole
CI matrix.
"""

from __future__ import annotations

import logging
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.coverage import ParseLimits
from app.db.models import Commit, Upload, UploadState
from app.web.compare import compare_flags, compare_totals
from app.web.queries import find_base, report_version
from app.web.reports import ReportCache, total_of

logger = logging.getLogger(__name__)

#: Files named in the notification.
TOP_FILES = 10
#: Most flagged uploads (head and base together) whose reports are re-read
#: for per-flag deltas.
FLAG_UPLOADS_MAX = 50


def _flagged_uploads(session: Session, commit_ids: list[int]) -> int:
    flags = session.scalars(
        sa.select(Upload.flags).where(
            Upload.commit_id.in_(commit_ids), Upload.state == UploadState.MERGED
        )
    )
    return sum(1 for f in flags if f)


def commit_delta(session: Session, commit: Commit, limits: ParseLimits) -> dict[str, Any]:
    """The change of ``commit`` against its base (JSON-serialisable).

    A merged report that cannot be read (``ValueError`` from the loader)
    must not hold up the notification: the comparison then says why it is
    missing instead.
    """
    try:
        return _commit_delta(session, commit, limits)
    except ValueError as exc:
        logger.warning("No comparison for commit %s: %s", commit.id, exc)
        return {"base_commit": None, "change": None, "error": str(exc)[:500]}


def _commit_delta(session: Session, commit: Commit, limits: ParseLimits) -> dict[str, Any]:
    cache = ReportCache(limits)
    head = cache.file_totals(session, commit.id, report_version(session, commit.id))
    base = find_base(session, commit)
    base_files = None
    if base is not None:
        base_files = cache.file_totals(session, base.id, report_version(session, base.id))
    result = compare_totals(base_files, head, top=TOP_FILES)
    result["base_commit"] = base.sha if base is not None else None
    ids = [commit.id] + ([base.id] if base is not None else [])
    flagged = _flagged_uploads(session, ids)
    if flagged > FLAG_UPLOADS_MAX:
        result["flags"] = None
        result["flags_skipped"] = f"{flagged} flagged uploads (over {FLAG_UPLOADS_MAX})"
        return result
    head_flags = cache.flag_totals(session, commit.id, report_version(session, commit.id))
    base_flags = (
        cache.flag_totals(session, base.id, report_version(session, base.id)) if base else {}
    )
    result["flags"] = compare_flags(
        {f: total_of(files) for f, files in base_flags.items()},
        {f: total_of(files) for f, files in head_flags.items()},
    )
    return result
