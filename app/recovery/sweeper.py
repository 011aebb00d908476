"""``sweep``: re-drive uploads that stopped moving.

Redis can lose its data, and a worker can die between two steps. Postgres
still has every upload's raw bytes and state, so anything stuck in a
pending state longer than ``sweep_after_s`` is put back on its way:

- ``uploaded`` / ``processing``: back into the processing set, processor sent;
- ``processed`` with its intermediate still in Redis: back into the processed
  set, finisher sent;
- ``processed`` without it: to ``processing``, processor sent (it re-parses).

With presigned PUTs (``COVWORKER_S3_PRESIGN=true``), an ``awaiting`` upload
of that age whose object is in the store lost its arrival chain
(app/ingest/arrival.py): it is admitted as the chain would have (the
fence, then the processor), exactly once.

It also sends ``notify`` for settled commits whose latest report version has
no notification (a worker died between the merge and the notify).

If Redis lost its data (``ProcessingState.claim_epoch``: the epoch marker is
gone), no age applies: every upload in flight is re-driven at once, since
no message or set that would have moved it survived, in pages until none is
left however many there are. The first marker ever set is treated alike for
the uploads Redis does not know (in neither set of their commit): Redis may
have been emptied before any worker ran. Each page of uploads is decided in
one short transaction; Redis is asked before it and told after it commits,
so no row lock is held across a Redis round trip.

An upload a processor started (``processing``) and that is still there after
``sweep_after_s`` is re-driven at most ``max_redrives`` times, counted in
``uploads.redrives`` as the merge counts its own: then it ends ``error`` with
the reason, and its commit is notified. A poison payload that kills or
times out its worker every time cannot cycle for ever.
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
    fail_uploads,
    utcnow,
)
from app.ingest.admit import SendProcessor, send_in_lanes
from app.ingest.arrival import admit_arrived
from app.notify.webhooks import overdue_webhooks
from app.recovery.retention import drop_expired_raw, drop_expired_test_results
from app.runtime.services import Services
from app.runtime.state import last_sweep_key

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
    #: Merged uploads whose raw bytes retention dropped (app/recovery/retention.py).
    raw_dropped: int = 0
    #: Notifications whose overdue webhook attempt was sent again.
    webhooks: list[int] = field(default_factory=list)
    #: Redis had lost its data (the epoch marker was gone): everything in
    #: flight was re-driven whatever its age.
    redis_lost: bool = False
    #: This sweep set the first epoch marker ever: uploads in flight that
    #: Redis did not know were re-driven whatever their age.
    first_epoch: bool = False
    #: Uploads the sweep had re-driven ``max_redrives`` times: now ``error``.
    given_up: list[int] = field(default_factory=list)
    #: Presigned uploads whose object arrived but whose arrival chain was
    #: lost: moved out of ``awaiting`` and sent to the processor.
    admitted: list[int] = field(default_factory=list)


def sweep(
    services: Services,
    *,
    send_processor: SendProcessor,
    send_finisher: Callable[[int, int], object],
    send_notify: Callable[[int, int], object],
    send_webhook: Callable[[int], object] | None = None,
    now: datetime | None = None,
    older_than_s: float | None = None,
) -> SweepResult:
    now = now or utcnow()
    state, result = services.state, SweepResult()
    epoch = detect_redis_loss(services)
    result.redis_lost, result.first_epoch = epoch == LOST, epoch == FIRST
    recovering = epoch is not None
    if result.redis_lost:
        logger.warning(
            "Redis lost its data (its epoch marker is gone): re-driving every upload in flight."
        )
    elif result.first_epoch:
        logger.info(
            "First epoch marker set: re-driving uploads in flight that Redis does not know."
        )
    age = services.settings.sweep_after_s if older_than_s is None else older_than_s
    # Stuck this long: re-driven by any sweep. A recovery re-drives younger
    # uploads too: after a loss all of them, after the first marker those
    # Redis does not know.
    stuck = now - timedelta(seconds=age)
    cutoff = now if recovering else stuck
    # Counted re-drives: only those of the age-based sweep (an upload stuck that
    # long), not recovery's (every upload in flight lost its messages at once).
    bound = None if recovering else services.settings.max_redrives
    after_id = 0
    to_finish: set[tuple[int, int]] = set()
    to_notify: set[tuple[int, int]] = set()
    # A recovery drains everything in flight; an ordinary sweep takes a batch.
    while recovering or len(result.reprocessed) + len(result.refinished) < SWEEP_BATCH:
        with services.sessions() as session:  # candidates, no lock held
            page = session.execute(
                sa.select(
                    Upload.id,
                    Upload.state,
                    Commit.repository_id,
                    Upload.commit_id,
                    (Upload.updated_at <= stuck).label("stuck"),
                )
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
        if result.first_epoch:  # what Redis does not know is lost; the rest waits its age
            known = state.tracked([(r, c, u) for u, _, r, c, _ in page])
            page = [row for row, tracked in zip(page, known, strict=True) if not tracked or row[4]]
            if not page:
                continue
        # Whose intermediate survived: asked of Redis before any row is locked.
        processed = [(r, c, u) for u, st, r, c, _ in page if st == UploadState.PROCESSED]
        found = state.intermediates_exist(processed)
        survived = {u for (_, _, u), ok in zip(processed, found, strict=True) if ok}
        claimed, given_up = _claim_page(
            services, [row[0] for row in page], survived, cutoff, now, bound
        )
        # Redis and the broker only after the page's transaction committed.
        reparse: dict[tuple[int, int], list[int]] = {}
        for upload_id, _, repoid, commitid, _ in page:
            if upload_id in given_up:
                state.drop_failed(repoid, commitid, upload_id)
                to_notify.add((repoid, commitid))
                result.given_up.append(upload_id)
            elif upload_id not in claimed:
                continue  # moved on meanwhile, or another sweep holds it
            elif upload_id in survived:
                state.mark_processed(repoid, commitid, upload_id)
                to_finish.add((repoid, commitid))
                result.refinished.append(upload_id)
            else:
                reparse.setdefault((repoid, commitid), []).append(upload_id)
        # A re-drive, not an admission (app/ingest/admit.py): these passed the fence long ago.
        for (repoid, commitid), upload_ids in reparse.items():
            processing = state.mark_processing(repoid, commitid, upload_ids)  # one SADD a commit
            send_in_lanes(send_processor, upload_ids, processing, services.settings.processor_share)
            result.reprocessed += upload_ids
    result.admitted = admit_arrived(
        services,
        now=now,
        older_than_s=(now - cutoff).total_seconds(),
        send_processor=send_processor,
    )
    for repoid, commitid in sorted(to_finish):
        send_finisher(repoid, commitid)
    unnotified = _settled_without_notification(services, cutoff, now, drain=recovering)
    for repoid, commitid in sorted(to_notify | set(unnotified)):
        send_notify(repoid, commitid)
        result.renotified.append((repoid, commitid))
    with services.sessions() as session:
        overdue = overdue_webhooks(session, now) if send_webhook is not None else []
    services.metrics.swept(len(result.reprocessed), len(result.refinished), len(result.renotified))
    result.raw_dropped = drop_expired_raw(services, now)
    drop_expired_test_results(services, now)
    for notification_id in overdue:  # their scheduled attempt was lost
        assert send_webhook is not None
        send_webhook(notification_id)
        result.webhooks.append(notification_id)
    if result.given_up:
        logger.warning(
            "Sweep: uploads %s end in error after %s re-drives without finishing.",
            result.given_up[:LAST_SWEEP_IDS],
            services.settings.max_redrives,
        )
    if result.admitted:
        logger.warning(
            "Sweep admitted %s presigned uploads whose payload arrived unseen: %s.",
            len(result.admitted),
            result.admitted[:LAST_SWEEP_IDS],
        )
    if result.reprocessed or result.refinished or result.renotified:
        logger.warning(
            "Sweep re-drove %s uploads to processing, %s to the finisher, %s commits to notify.",
            len(result.reprocessed),
            len(result.refinished),
            len(result.renotified),
        )
    _record(services, now, result)
    return result


#: What ``detect_redis_loss`` found: Redis lost the marker the database
#: remembers, or this caller set the first marker ever.
LOST, FIRST = "lost", "first"


def detect_redis_loss(services: Services) -> str | None:
    """``LOST`` or ``FIRST``, for the one caller that set a new epoch marker;
    None for everyone else (the marker was there, or another caller set it).

    The marker has no TTL and covworker never deletes it: if it is missing
    while the database remembers setting one, Redis was flushed or restarted
    without persistence. The first caller to set a new marker (SET NX) wins
    and records it in the database. The first marker ever set may follow a
    loss too (Redis emptied before any worker ran): its caller re-drives the
    uploads in flight Redis does not know.
    """
    token = services.state.claim_epoch()
    if token is None:
        return None
    with services.sessions.begin() as session:
        row = session.scalar(sa.select(Instance).order_by(Instance.created_at).limit(1))
        if row is None:  # not migrated: Services already refuses this
            return None
        had_one = row.redis_epoch is not None
        row.redis_epoch = token
    return LOST if had_one else FIRST


def _claim_page(
    services: Services,
    ids: list[int],
    survived: set[int],
    cutoff: datetime,
    now: datetime,
    bound: int | None,
) -> tuple[set[int], set[int]]:
    """Lock the page's uploads still stuck (skipping rows a worker holds), mark
    them swept now and send those without an intermediate back to processing,
    in one short transaction; (the ids claimed, the ids given up).

    With a ``bound``, an upload still ``processing`` (a processor started it
    and never finished) is a counted re-drive; one re-driven ``bound`` times
    already ends ``error`` instead."""
    given_up: set[int] = set()
    with services.sessions.begin() as session:
        rows = session.execute(
            sa.select(Upload.id, Upload.state, Upload.redrives)
            .where(
                Upload.id.in_(ids),
                Upload.state.in_(PENDING_STATES),
                Upload.updated_at <= cutoff,
            )
            .with_for_update(skip_locked=True)
        ).all()
        claimed = {row.id for row in rows}
        if bound is not None:
            started = {row.id for row in rows if row.state == UploadState.PROCESSING}
            given_up = {row.id for row in rows if row.id in started and row.redrives >= bound}
            if given_up:
                reason = (
                    f"processing it never finished: it was re-driven {bound} times "
                    f"(COVWORKER_MAX_REDRIVES) and its processor stopped each time"
                )
                fail_uploads(session, given_up, reason, now)
            counted = started - given_up
            if counted:
                session.execute(
                    sa.update(Upload)
                    .where(Upload.id.in_(counted))
                    .values(redrives=Upload.redrives + 1)
                )
            claimed -= given_up
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
    return claimed, given_up


def _record(services: Services, now: datetime, result: SweepResult) -> None:
    """Keep what this sweep did in Redis, for the operations page."""
    record = {
        "at": now.isoformat(),
        "finished_at": time.time(),
        "reprocessed": len(result.reprocessed),
        "refinished": len(result.refinished),
        "renotified": len(result.renotified),
        "admitted": len(result.admitted),
        "admitted_ids": result.admitted[:LAST_SWEEP_IDS],
        "reprocessed_ids": result.reprocessed[:LAST_SWEEP_IDS],
        "refinished_ids": result.refinished[:LAST_SWEEP_IDS],
        "renotified_commits": [list(c) for c in result.renotified[:LAST_SWEEP_IDS]],
    }
    key = last_sweep_key(services.settings.namespace)
    services.redis.set(key, json.dumps(record), ex=LAST_SWEEP_TTL_S)


#: How far back the sweep looks for settled commits whose state was not
#: notified: commits with an upload that became final since then.
NOTIFY_CATCHUP_S = 7 * 24 * 3600


def _settled_without_notification(
    services: Services, cutoff: datetime, now: datetime, *, drain: bool
) -> list[tuple[int, int]]:
    """Commits whose uploads all became final before ``cutoff`` (and one of
    them within ``NOTIFY_CATCHUP_S``) whose settled state (report version,
    uploads merged, uploads failed) has no notification: a commit whose
    uploads all failed (report version 0) as much as one that merged.

    ``drain``: every such commit, in pages; else at most ``SWEEP_BATCH``.
    """
    since = now - timedelta(seconds=NOTIFY_CATCHUP_S)
    final = (UploadState.MERGED, UploadState.ERROR)
    # Commits with an upload that became final lately (ix_uploads_state_updated).
    recent = (
        sa.select(Upload.commit_id)
        .where(Upload.state.in_(final), Upload.updated_at > since)
        .distinct()
        .subquery()
    )
    is_ = Upload.state
    counts = (
        sa.select(
            Upload.commit_id.label("commit_id"),
            sa.func.count().filter(is_ == UploadState.MERGED).label("merged"),
            sa.func.count().filter(is_ == UploadState.ERROR).label("failed"),
            sa.func.count().filter(is_.in_(PENDING_STATES)).label("pending"),
            sa.func.max(Upload.updated_at).label("last"),
        )
        .where(Upload.commit_id.in_(sa.select(recent.c.commit_id)), is_ != UploadState.AWAITING)
        .group_by(Upload.commit_id)
        .subquery()
    )
    notified = sa.exists().where(
        Notification.commit_id == counts.c.commit_id,
        Notification.report_version == sa.func.coalesce(CommitReport.version, 0),
        Notification.uploads_merged == counts.c.merged,
        Notification.uploads_errored == counts.c.failed,
    )
    found: list[tuple[int, int]] = []
    after = 0
    while True:
        with services.sessions() as session:
            rows = session.execute(
                sa.select(Commit.repository_id, Commit.id)
                .join(counts, counts.c.commit_id == Commit.id)
                .outerjoin(CommitReport, CommitReport.commit_id == Commit.id)
                .where(counts.c.pending == 0, counts.c.last <= cutoff, ~notified, Commit.id > after)
                .order_by(Commit.id)
                .limit(SWEEP_PAGE if drain else SWEEP_BATCH)
            ).all()
        found += [(r[0], r[1]) for r in rows]
        if not drain or not rows:
            return found
        after = rows[-1][1]
