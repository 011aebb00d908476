"""What a report version's pages need, stored with it by the merge pass.

The commit page lists per-file totals and compares them with the base
commit's. Computing that from the merged reports means decoding two whole
reports (about 8 s for two 1,000,000-line reports), so the first view of a
new version would wait for it. The merge pass already holds the merged
report column by column, so it stores beside it, in the same transaction:

- ``commit_reports.file_totals``: the per-file totals (lines, hits, misses,
  partials per path; a few hundred KiB compressed for 20,000 files),
  which :class:`app.web.reports.ReportCache` reads instead of the report;
- ``commit_reports.comparison``: :func:`app.pullrequests.compare.compare_totals`
  against the base found at merge time, with the base's commit id and report
  version, used while the page's base is still that version.

A version merged before these columns existed has neither: the pages then
decode the report as they always did (:func:`load_file_totals`).
"""

from __future__ import annotations

import json
import logging
import zlib
from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.coverage.columnar import Columns, Part
from app.coverage.model import Totals
from app.db.models import Commit, CommitReport
from app.pullrequests.compare import compare_totals

logger = logging.getLogger(__name__)

#: The stored form's version (the first member of the JSON document).
FILE_TOTALS_VERSION = 1


def columns_file_totals(files: Mapping[str, Columns]) -> dict[str, Totals]:
    """Per path, sorted, the totals :meth:`Report.file_totals` gives for the same report."""
    out: dict[str, Totals] = {}
    for path in sorted(files):
        lns, hits, br = files[path]
        n, missed = len(lns), hits.count(0)
        partials = 0
        open_lines = [ln for ln, b in br.items() if b.covered < b.total]
        if open_lines:
            by_line = dict(zip(lns, hits, strict=True))
            partials = sum(1 for ln in open_lines if by_line.get(ln, 0) > 0)
        out[path] = Totals(1, n, n - missed - partials, missed, partials)
    return out


def encode_file_totals(totals: Mapping[str, Totals]) -> bytes:
    """``[1, [path, lines, hits, misses, partials], ...]`` as JSON, zlib-compressed."""
    rows: list[Any] = [FILE_TOTALS_VERSION]
    rows.extend([p, t.lines, t.hits, t.misses, t.partials] for p, t in totals.items())
    return zlib.compress(json.dumps(rows, separators=(",", ":")).encode(), 1)


def decode_file_totals(data: bytes) -> dict[str, Totals]:
    """Read :func:`encode_file_totals`; anything else is a ``ValueError``."""
    try:
        rows = json.loads(zlib.decompress(data))
    except (zlib.error, UnicodeDecodeError) as exc:
        raise ValueError(f"corrupt stored file totals: {exc!r}") from exc
    if not isinstance(rows, list) or not rows or rows[0] != FILE_TOTALS_VERSION:
        raise ValueError("corrupt stored file totals: unknown version")
    try:
        return {
            p: Totals(1, lines, hits, misses, partials)
            for p, lines, hits, misses, partials in rows[1:]
        }
    except (TypeError, ValueError) as exc:
        raise ValueError(f"corrupt stored file totals: {exc!r}") from exc


def load_file_totals(session: Session, commit_id: int) -> dict[str, Totals]:
    """The commit's per-file totals: stored by its merge, else from its report."""
    stored = session.scalar(
        sa.select(CommitReport.file_totals).where(CommitReport.commit_id == commit_id)
    )
    if stored:
        return decode_file_totals(stored)
    blob = session.scalar(sa.select(CommitReport.report).where(CommitReport.commit_id == commit_id))
    return columns_file_totals(Part.from_bytes(blob).files) if blob else {}


def stored_comparison(
    session: Session, commit_id: int, version: int, base_id: int | None, base_version: int
) -> dict[str, Any] | None:
    """The comparison the merge stored, if it was made for this version against
    this base at this base version; else None (compute it)."""
    stored = session.scalar(
        sa.select(CommitReport.comparison).where(CommitReport.commit_id == commit_id)
    )
    if not isinstance(stored, dict):
        return None
    if (stored.get("version"), stored.get("base_commit_id"), stored.get("base_version")) != (
        version,
        base_id,
        base_version if base_id is not None else None,
    ):
        return None
    result = stored.get("result")
    return result if isinstance(result, dict) else None


def summarise(
    session: Session, row: CommitReport, files: Mapping[str, Columns] | None = None
) -> None:
    """Store ``row``'s per-file totals and comparison for its current version.

    ``files``: the merged report as the pass holds it; None when what was
    stored differs from it (carried-forward flags merged in), then the
    stored report is decoded.
    """
    from app.web.queries import find_base  # the pages' rule for the base

    if files is None:
        files = Part.from_bytes(row.report).files if row.report else {}
    head = columns_file_totals(files)
    row.file_totals = encode_file_totals(head)
    commit = session.get(Commit, row.commit_id)
    base = find_base(session, commit) if commit is not None else None
    base_version = None
    base_files = None
    if base is not None:
        base_version = (
            session.scalar(sa.select(CommitReport.version).where(CommitReport.commit_id == base.id))
            or 0
        )
        try:
            base_files = load_file_totals(session, base.id)
        except ValueError as exc:  # the base's own problem must not fail this merge
            logger.warning("No stored comparison for commit %s: %s", row.commit_id, exc)
            row.comparison = None
            return
    row.comparison = {
        "version": row.version,
        "base_commit_id": base.id if base is not None else None,
        "base_version": base_version,
        "result": compare_totals(base_files, head),
    }
