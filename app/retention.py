"""Retention of raw reports: merged uploads older than
``COVWORKER_RAW_RETENTION_DAYS`` lose their raw bytes; the row, its state,
format and flags, and the merged coverage stay. Such an upload cannot be
re-processed any more (``status`` shows it as ``raw_dropped``). Uploads in
error keep their bytes, so the report that failed can still be examined.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import sqlalchemy as sa

from app.db.models import Upload, UploadState, utcnow
from app.services import Services

#: Most uploads whose raw bytes one sweep drops (the next sweep goes on).
RETENTION_BATCH = 1000


def drop_expired_raw(services: Services, now: datetime | None = None) -> int:
    """Drop the raw bytes of merged uploads older than the retention; how many."""
    days = services.settings.raw_retention_days
    if days <= 0:
        return 0
    now = now or utcnow()
    cutoff = now - timedelta(days=days)
    with services.sessions.begin() as session:
        expired = (
            sa.select(Upload.id)
            .where(
                Upload.state == UploadState.MERGED,
                Upload.merged_at <= cutoff,
                Upload.raw_dropped_at.is_(None),
            )
            .order_by(Upload.id)
            .limit(RETENTION_BATCH)
            .scalar_subquery()
        )
        result = session.execute(
            sa.update(Upload)
            .where(Upload.id.in_(expired), Upload.state == UploadState.MERGED)
            .values(raw=b"", raw_dropped_at=now)
            .execution_options(synchronize_session=False)
        )
        dropped = int(result.rowcount)  # type: ignore[attr-defined]
    if dropped:
        services.metrics.dropped_raw(dropped)
    return dropped
