"""``sweep``: re-drive uploads that stopped moving.

Redis can lose its data, and a worker can die between two steps. Postgres
still has every upload's raw bytes and state, so anything stuck in a
pending state longer than ``sweep_after_s`` is put back on its way:

- ``uploaded`` / ``processing``: back into the processing set, processor sent;
- ``processed`` with its intermediate still in Redis: back into the processed
  set, finisher sent;
- ``processed`` without it: to ``processing``, processor sent (it re-parses).

It also sends ``notify`` for settled commits whose latest report version has
no notification (a worker died between the merge and the notify).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import sqlalchemy as sa

from app.db.models import (
    PENDING_STATES,
    Commit,
    CommitReport,
    Notification,
    Upload,
    UploadState,
    utcnow,
)
from app.services import Services

logger = logging.getLogger(__name__)

#: Most stuck uploads handled by one sweep; the next sweep takes the rest.
SWEEP_BATCH = 10_000
#: How long the record of the last sweep (the operations page shows it) is kept.
LAST_SWEEP_TTL_S = 7 * 24 * 3600
#: Upload ids listed in that record.
LAST_SWEEP_IDS = 100


@dataclass(slots=True)
class SweepResult:
    reprocessed: list[int] = field(default_factory=list)
    refinished: list[int] = field(default_factory=list)
    renotified: list[tuple[int, int]] = field(default_factory=list)


def sweep(
    services: Services,
    *,
    send_processor: Callable[[int], object],
    send_finisher: Callable[[int, int], object],
    send_notify: Callable[[int, int], object],
    now: datetime | None = None,
    older_than_s: float | None = None,
) -> SweepResult:
    now = now or utcnow()
    age = services.settings.sweep_after_s if older_than_s is None else older_than_s
    cutoff = now - timedelta(seconds=age)
    state, result = services.state, SweepResult()
    with services.sessions.begin() as session:
        stuck = session.execute(
            sa.select(Upload.id, Upload.state, Commit.repository_id, Upload.commit_id)
            .join(Commit, Commit.id == Upload.commit_id)
            .where(Upload.state.in_(PENDING_STATES), Upload.updated_at <= cutoff)
            .order_by(Upload.id)
            .limit(SWEEP_BATCH)
            .with_for_update(skip_locked=True, of=Upload)
        ).all()
        to_process: list[tuple[int, int, int]] = []
        to_finish: set[tuple[int, int]] = set()
        # Whose intermediate survived, asked of Redis in one round trip.
        processed = [
            (repo, commit, u) for u, st, repo, commit in stuck if st == UploadState.PROCESSED
        ]
        found = state.intermediates_exist(processed)
        survived = {u for (_, _, u), ok in zip(processed, found, strict=True) if ok}
        for upload_id, _, repoid, commitid in stuck:
            if upload_id in survived:
                state.mark_processed(repoid, commitid, upload_id)
                to_finish.add((repoid, commitid))
                result.refinished.append(upload_id)
            else:
                to_process.append((upload_id, repoid, commitid))
                result.reprocessed.append(upload_id)
        if stuck:
            session.execute(
                sa.update(Upload)
                .where(Upload.id.in_([row[0] for row in stuck]))
                .values(updated_at=now)
            )
        session.execute(
            sa.update(Upload)
            .where(Upload.id.in_(result.reprocessed), Upload.state == UploadState.PROCESSED)
            .values(state=UploadState.PROCESSING)
        )
        unnotified = _settled_without_notification(session, cutoff)

    for upload_id, repoid, commitid in to_process:
        state.mark_processing(repoid, commitid, [upload_id])
        send_processor(upload_id)
    for repoid, commitid in sorted(to_finish):
        send_finisher(repoid, commitid)
    for repoid, commitid in unnotified:
        send_notify(repoid, commitid)
        result.renotified.append((repoid, commitid))
    if stuck or unnotified:
        logger.warning(
            "Sweep re-drove %s uploads to processing, %s to the finisher, %s commits to notify.",
            len(result.reprocessed),
            len(result.refinished),
            len(unnotified),
        )
    _record(services, now, result)
    return result


def _last_sweep_key(namespace: str) -> str:
    return f"{namespace}:sweep:last"


def _record(services: Services, now: datetime, result: SweepResult) -> None:
    """Keep what this sweep did in Redis, for the operations page."""
    record = {
        "at": now.isoformat(),
        "finished_at": time.time(),
        "reprocessed": len(result.reprocessed),
        "refinished": len(result.refinished),
        "renotified": len(result.renotified),
        "reprocessed_ids": result.reprocessed[:LAST_SWEEP_IDS],
        "refinished_ids": result.refinished[:LAST_SWEEP_IDS],
        "renotified_commits": [list(c) for c in result.renotified[:LAST_SWEEP_IDS]],
    }
    key = _last_sweep_key(services.settings.namespace)
    services.redis.set(key, json.dumps(record), ex=LAST_SWEEP_TTL_S)


def last_sweep(client: object, namespace: str) -> dict[str, object] | None:
    """The record of the last sweep, or None if none ran (or it expired)."""
    raw = client.get(_last_sweep_key(namespace))  # type: ignore[attr-defined]
    return json.loads(raw) if raw else None


def _settled_without_notification(
    session: sa.orm.Session, cutoff: datetime
) -> list[tuple[int, int]]:
    """Commits whose report changed before ``cutoff`` with no notification of
    that version and no pending upload."""
    notified = sa.exists().where(
        Notification.commit_id == CommitReport.commit_id,
        Notification.report_version == CommitReport.version,
    )
    pending = sa.exists().where(
        Upload.commit_id == CommitReport.commit_id, Upload.state.in_(PENDING_STATES)
    )
    rows = session.execute(
        sa.select(Commit.repository_id, Commit.id)
        .join(CommitReport, CommitReport.commit_id == Commit.id)
        .where(CommitReport.version > 0, CommitReport.updated_at <= cutoff, ~notified, ~pending)
        .limit(SWEEP_BATCH)
    ).all()
    return [(r[0], r[1]) for r in rows]
