"""The change of a settled commit against its base, for its notification.

``commit_delta`` is what the notifier stores on the notification row and
sends in the webhook body: the total change, per-flag changes and the files
whose coverage changed most (``compare``). Per-flag totals come from the
per-flag reports the finisher keeps (``app/flag_reports.py``).
"""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy.orm import Session

from app.bases import find_base
from app.coverage import ParseLimits
from app.db.models import Commit
from app.pullrequests.carryforward import carried_flags
from app.web.compare import compare_flags, compare_totals
from app.web.queries import report_version
from app.web.reports import ReportCache

logger = logging.getLogger(__name__)

#: Files named in the notification.
TOP_FILES = 10


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
    head_flags = cache.flag_totals(session, commit.id, report_version(session, commit.id))
    base_flags = (
        cache.flag_totals(session, base.id, report_version(session, base.id)) if base else {}
    )
    result["flags"] = compare_flags(base_flags, head_flags, carried_flags(session, commit.id))
    return result
