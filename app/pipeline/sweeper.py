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

If Redis lost its data (``ProcessingState.claim_epoch``: the epoch marker is
gone), no age applies: every upload in flight is re-driven at once, since
no message or set that would have moved it survived. Each page of uploads is
decided in one short transaction; Redis is asked before it and told after it
commits, so no row lock is held across a Redis round trip.
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
    Instance,
    Notification,
    Upload,
    UploadState,
    utcnow,
)
from app.pipeline.webhooks import overdue_webhooks
from app.retention import drop_expired_raw, drop_expired_test_results
from app.services import Services

logger = logging.getLogger(__name__)

#: Most stuck uploads handled by one sweep; the next sweep takes the rest.
SWEEP_BATCH = 10_000
#: Uploads decided per transaction: row locks are held only while that page
#: is updated, never while Redis is asked or told anything.
SWEEP_PAGE = 500

#: How long the record of the last sweep (the operations page shows it) is kept.
LAST_SWEEP_TTL_S = 7 * 24 * 3600
#: Upload ids listed in that record.
LAST_SWEEP_IDS = 100


@dataclass(slots=True)
class SweepResult:
    reprocessed: list[int] = field(default_factory=list)
    refinished: list[int] = field(default_factory=list)
    renotified: list[tuple[int, int]] = field(default_factory=list)
    #: Merged uploads whose raw bytes retention dropped (app/retention.py).
    raw_dropped: int = 0
    #: Notifications whose overdue webhook attempt was sent again.
    webhooks: list[int] = field(default_factory=list)
    #: Redis had lost its data (the epoch marker was gone): everything in
    #: flight was re-driven whatever its age.
    redis_lost: bool = False


def sweep(
    services: Services,
    *,
    send_processor: Callable[[int], object],
    send_finisher: Callable[[int, int], object],
    send_notify: Callable[[int, int], object],
    send_webhook: Callable[[int], object] | None = None,
    now: datetime | None = None,
    older_than_s: float | None = None,
) -> SweepResult:
    now = now or utcnow()
    state, result = services.state, SweepResult()
    result.redis_lost = detect_redis_loss(services)
    if result.redis_lost:
        age = 0.0  # nothing in flight can still be on its way: re-drive it all now
        logger.warning(
            "Redis lost its data (its epoch marker is gone): re-driving every upload in flight."
        )
    else:
        age = services.settings.sweep_after_s if older_than_s is None else older_than_s
    cutoff = now - timedelta(seconds=age)
    after_id = 0
    to_finish: set[tuple[int, int]] = set()
    while len(result.reprocessed) + len(result.refinished) < SWEEP_BATCH:
        with services.sessions() as session:  # candidates, no lock held
            page = session.execute(
                sa.select(Upload.id, Upload.state, Commit.repository_id, Upload.commit_id)
                .join(Commit, Commit.id == Upload.commit_id)
                .where(
                    Upload.state.in_(PENDING_STATES),
                    Upload.updated_at <= cutoff,
                    Upload.id > after_id,
                )
                .order_by(Upload.id)
                .limit(SWEEP_PAGE)
            ).all()
        if not page:
            break
        after_id = page[-1][0]
        # Whose intermediate survived: asked of Redis before any row is locked.
        processed = [(r, c, u) for u, st, r, c in page if st == UploadState.PROCESSED]
        found = state.intermediates_exist(processed)
        survived = {u for (_, _, u), ok in zip(processed, found, strict=True) if ok}
        claimed = _claim_page(services, [row[0] for row in page], survived, cutoff, now)
        # Redis and the broker only after the page's transaction committed.
        reparse: dict[tuple[int, int], list[int]] = {}
        for upload_id, _, repoid, commitid in page:
            if upload_id not in claimed:
                continue  # moved on meanwhile, or another sweep holds it
            if upload_id in survived:
                state.mark_processed(repoid, commitid, upload_id)
                to_finish.add((repoid, commitid))
                result.refinished.append(upload_id)
            else:
                reparse.setdefault((repoid, commitid), []).append(upload_id)
        for (repoid, commitid), upload_ids in reparse.items():
            state.mark_processing(repoid, commitid, upload_ids)  # one SADD per commit
            for upload_id in upload_ids:
                send_processor(upload_id)
            result.reprocessed += upload_ids
    for repoid, commitid in sorted(to_finish):
        send_finisher(repoid, commitid)
    with services.sessions() as session:
        unnotified = _settled_without_notification(session, cutoff)
        overdue = overdue_webhooks(session, now) if send_webhook is not None else []
    for repoid, commitid in unnotified:
        send_notify(repoid, commitid)
        result.renotified.append((repoid, commitid))
    services.metrics.swept(len(result.reprocessed), len(result.refinished), len(unnotified))
    result.raw_dropped = drop_expired_raw(services, now)
    drop_expired_test_results(services, now)
    for notification_id in overdue:  # their scheduled attempt was lost
        assert send_webhook is not None
        send_webhook(notification_id)
        result.webhooks.append(notification_id)
    if result.reprocessed or result.refinished or unnotified:
        logger.warning(
            "Sweep re-drove %s uploads to processing, %s to the finisher, %s commits to notify.",
            len(result.reprocessed),
            len(result.refinished),
            len(unnotified),
        )
    _record(services, now, result)
    return result


def detect_redis_loss(services: Services) -> bool:
    """True, for one caller, if Redis lost its data since the epoch marker was set.

    The marker has no TTL and covworker never deletes it: if it is missing
    while the database remembers setting one, Redis was flushed or restarted
    without persistence. The first caller to set a new marker (SET NX) wins
    and records it in the database; the first marker ever set is no loss.
    """
    token = services.state.claim_epoch()
    if token is None:
        return False
    with services.sessions.begin() as session:
        row = session.scalar(sa.select(Instance).order_by(Instance.created_at).limit(1))
        if row is None:  # not migrated: Services already refuses this
            return False
        had_one = row.redis_epoch is not None
        row.redis_epoch = token
    return had_one


def _claim_page(
    services: Services, ids: list[int], survived: set[int], cutoff: datetime, now: datetime
) -> set[int]:
    """Lock the page's uploads still stuck (skipping rows a worker holds), mark
    them swept now and send those without an intermediate back to processing,
    in one short transaction; the ids claimed."""
    with services.sessions.begin() as session:
        claimed = set(
            session.scalars(
                sa.select(Upload.id)
                .where(
                    Upload.id.in_(ids),
                    Upload.state.in_(PENDING_STATES),
                    Upload.updated_at <= cutoff,
                )
                .with_for_update(skip_locked=True)
            )
        )
        if claimed:
            session.execute(sa.update(Upload).where(Upload.id.in_(claimed)).values(updated_at=now))
            session.execute(
                sa.update(Upload)
                .where(
                    Upload.id.in_(claimed - survived),
                    Upload.state == UploadState.PROCESSED,
                )
                .values(state=UploadState.PROCESSING)
            )
    return claimed


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
