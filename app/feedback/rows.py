"""The pull-request feedback's rows: made ready (a version's ``prepare`` row,
written in the notification's own transaction; a ``pending`` row while
uploads are in flight), and each attempt's end (sent, retried with a
backoff, deferred for the budget, failed); ``pull_sent``, which orders the
writes, locked and marked. The order of the writes is
:mod:`app.feedback.delivery`'s module doc."""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.db.engine import conflict_insert
from app.db.models import (
    FINAL_STATES,
    PENDING_STATES,
    CommitReport,
    PullDelivery,
    PullSent,
    Upload,
    as_utc,
    utcnow,
)
from app.db.outbox import RetryPolicy
from app.db.pull_deliveries import FAILED, PENDING, PENDING_STATUSES, PREPARE, SENT
from app.runtime.services import Services
from app.settings import Settings

logger = logging.getLogger(__name__)

#: A final status's payload key: send it only over a pending one of its commit
#: (a commit that settled with nothing merged ends its pending statuses).
IF_PENDING = "if_pending"


@dataclass(frozen=True, slots=True)
class Target:
    """A row ``prepare`` asks for: its target and payload."""

    target: str
    payload: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Prepared:
    """What ``prepare`` found: the rows to write, and what the pages show."""

    targets: Sequence[Target]
    #: Stored on the prepare row: the pull request, base, patch coverage, files.
    info: dict[str, Any]


@dataclass(slots=True)
class Attempt:
    """What one delivery attempt did."""

    attempted: bool
    state: str = PENDING
    retry_in_s: float | None = None
    error: str | None = None
    #: Rows written by a prepare, to deliver next.
    followups: list[int] = field(default_factory=list)


def retry_policy(settings: Settings) -> RetryPolicy:
    return RetryPolicy(
        settings.pr_delivery_min_backoff_s,
        settings.pr_delivery_max_backoff_s,
        settings.pr_delivery_horizon_s,
    )


def digest(payload: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def uploads_known(session: Session, commit_id: int) -> tuple[int, int]:
    """(uploads known, uploads in flight) of the commit: the writes' rank (module doc).

    An ``awaiting`` upload (a presigned PUT not arrived) is neither."""
    known, in_flight = session.execute(
        sa.select(
            sa.func.count(),
            sa.func.count().filter(Upload.state.in_(PENDING_STATES)),
        ).where(Upload.commit_id == commit_id, Upload.state.in_((*PENDING_STATES, *FINAL_STATES)))
    ).one()
    return int(known or 0), int(in_flight or 0)


def arm_prepare(
    session: Session, commit_id: int, version: int, uploads: int, *, again: bool
) -> int | None:
    """The ``prepare`` row of the commit's settled ``version`` with ``uploads``
    uploads final, pending: created, or (``again``) made pending again if it ran
    already (a later settled state of the same version, a changed pull request).
    Its id, or None when it is not pending. In the caller's transaction: the
    notification that settles the state writes it with itself."""
    insert_ignore(
        session,
        PullDelivery,
        {
            "commit_id": commit_id,
            "report_version": version,
            "target": PREPARE,
            "payload": {"uploads": uploads},
            "state": PENDING,
            "created_at": utcnow(),
        },
    )
    row = session.execute(
        sa.select(PullDelivery.id, PullDelivery.state, PullDelivery.payload)
        .where(
            PullDelivery.commit_id == commit_id,
            PullDelivery.report_version == version,
            PullDelivery.target == PREPARE,
        )
        .with_for_update()
    ).one()
    payload = dict(row.payload or {})
    if row.state == PENDING:
        if int(payload.get("uploads") or 0) < uploads:
            payload["uploads"] = uploads
            session.execute(
                sa.update(PullDelivery).where(PullDelivery.id == row.id).values(payload=payload)
            )
        return int(row.id)
    if not again:
        return None
    session.execute(
        sa.update(PullDelivery)
        .where(PullDelivery.id == row.id)
        .values(
            state=PENDING,
            next_at=None,
            attempts=0,
            error=None,
            payload=payload | {"uploads": max(uploads, int(payload.get("uploads") or 0))},
        )
    )
    return int(row.id)


def space_prepare(
    session: Session, delivery_id: int, commit_id: int, version: int, spacing_s: float
) -> float:
    """Seconds the ``prepare`` row ``delivery_id`` (of ``version``) waits: while
    a commit keeps settling (a matrix trickling in), its feedback is prepared
    at most once every ``spacing_s``. A row within ``spacing_s`` of the
    previous version's row is due that much after it, and any newer version
    written meanwhile supersedes it (``app.feedback.delivery``), so a trickle
    is prepared once, then once more at most ``spacing_s`` after it stops,
    not once per arrival. The first version, or one after a pause, is due now."""
    if spacing_s <= 0:
        return 0.0
    previous = session.scalar(
        sa.select(sa.func.max(PullDelivery.created_at)).where(
            PullDelivery.commit_id == commit_id,
            PullDelivery.target == PREPARE,
            PullDelivery.report_version < version,
        )
    )
    if previous is None:
        return 0.0
    now = utcnow()
    due = as_utc(previous) + timedelta(seconds=spacing_s)
    if due <= now:
        return 0.0
    session.execute(
        sa.update(PullDelivery)
        .where(
            PullDelivery.id == delivery_id,
            sa.or_(PullDelivery.next_at.is_(None), PullDelivery.next_at < due),
        )
        .values(next_at=due)
    )
    return (due - now).total_seconds()


def drop_orphan_pending(session: Session, commit_id: int, version: int) -> None:
    """A commit settled at ``version``: ``pending`` rows for a later version will
    never see it (their uploads failed); removed, so the next uploads in flight
    get a pending row of their own."""
    session.execute(
        sa.delete(PullDelivery).where(
            PullDelivery.commit_id == commit_id,
            PullDelivery.target == PENDING_STATUSES,
            PullDelivery.report_version > version,
        )
    )


def enqueue_prepare(services: Services, commit_id: int, version: int) -> int | None:
    """The version's ``prepare`` row (created once); None if it is not pending.

    The notifier writes it with the notification (:func:`arm_prepare`); this is
    for a caller that has only the commit and version."""
    with services.sessions.begin() as session:
        known, _ = uploads_known(session, commit_id)
        return arm_prepare(session, commit_id, version, known, again=False)


def enqueue_pending(services: Services, commit_id: int) -> int | None:
    """A ``pending`` row for the version the commit's uploads in flight will make.

    None when nothing is in flight, or the row exists already (one per version).
    """
    with services.sessions.begin() as session:
        # The version first, then whether anything is in flight: an upload
        # still in flight after the version was read is merged into a later
        # one, so the pending row's version never passes the version that
        # settles (a final status of version v outranks pending ones up to v).
        current = session.scalar(
            sa.select(CommitReport.version).where(CommitReport.commit_id == commit_id)
        )
        if not uploads_known(session, commit_id)[1]:
            return None
        version = (current or 0) + 1
        inserted = session.execute(
            insert_ignore_stmt(
                session,
                PullDelivery,
                {
                    "commit_id": commit_id,
                    "report_version": version,
                    "target": PENDING_STATUSES,
                    "payload": {},
                    "state": PENDING,
                    "created_at": utcnow(),
                },
            ).returning(PullDelivery.id)
        ).first()
    return int(inserted[0]) if inserted is not None else None


def finish(
    session: Session,
    delivery_id: int,
    state: str,
    error: str | None,
    *,
    claim: datetime | None = None,
) -> None:
    """End the row in ``state``; with ``claim``, only if the row still holds it."""
    values: dict[str, Any] = {"state": state, "next_at": None, "error": error}
    if state == SENT:
        values["sent_at"] = utcnow()
    where = [PullDelivery.id == delivery_id]
    if claim is not None:
        where.append(PullDelivery.next_at == claim)
    session.execute(sa.update(PullDelivery).where(*where).values(**values))


def retry(
    services: Services,
    delivery_id: int,
    attempts: int,
    created: datetime,
    reason: str,
    wait_s: float,
) -> Attempt:
    now = utcnow()
    retry_in = retry_policy(services.settings).retry_in_s(created, now, attempts, wait_s)
    if retry_in is None:
        return fail(services, delivery_id, f"gave up after {attempts} attempts: {reason}")
    with services.sessions.begin() as session:
        session.execute(
            sa.update(PullDelivery)
            .where(PullDelivery.id == delivery_id)
            .values(next_at=now + timedelta(seconds=retry_in), error=reason[:2000])
        )
    logger.warning(
        "Pull-request delivery %s: attempt %s failed (%s); next in %.1f s.",
        delivery_id,
        attempts,
        reason,
        retry_in,
    )
    return Attempt(attempted=True, retry_in_s=retry_in, error=reason)


def defer(services: Services, delivery_id: int, reason: str, wait_s: float) -> Attempt:
    """The repository is over its budget of provider calls: the row waits until
    the budget allows a call, without counting this as an attempt, and never
    fails for the wait (a repository over its budget gets its feedback late,
    not never)."""
    services.metrics.feedback_held_back("over_budget")
    with services.sessions.begin() as session:
        session.execute(
            sa.update(PullDelivery)
            .where(PullDelivery.id == delivery_id)
            .values(
                next_at=utcnow() + timedelta(seconds=wait_s),
                attempts=PullDelivery.attempts - 1,  # the claim counted one
                error=reason[:2000],
            )
        )
    logger.warning("Pull-request delivery %s deferred %.1f s: %s", delivery_id, wait_s, reason)
    return Attempt(attempted=True, retry_in_s=wait_s, error=reason)


def fail(services: Services, delivery_id: int, reason: str) -> Attempt:
    with services.sessions.begin() as session:
        finish(session, delivery_id, FAILED, reason[:2000])
    logger.warning("Pull-request delivery %s failed: %s", delivery_id, reason)
    return Attempt(attempted=True, state=FAILED, error=reason)


def lock_sent(session: Session, key: str) -> PullSent:
    """The key's row, created if missing and locked until the transaction ends.

    One statement: an upsert whose no-op update takes the row lock (as
    ``SELECT ... FOR UPDATE`` would) and returns the row.
    """
    statement = (
        conflict_insert(session, PullSent)
        .values(key=key, commit_id=0, report_version=-1, updated_at=utcnow())
        .on_conflict_do_update(index_elements=[PullSent.key], set_={"key": key})
        .returning(PullSent)
    )
    return session.scalars(
        sa.select(PullSent).from_statement(statement).execution_options(populate_existing=True)
    ).one()


def mark(session: Session, sent: PullSent, commit_id: int, version: int, wanted: str) -> None:
    sent.commit_id, sent.report_version, sent.digest = commit_id, version, wanted
    sent.updated_at = utcnow()


def insert_ignore_stmt(session: Session, model: Any, values: dict[str, Any]) -> Any:
    return conflict_insert(session, model).values(**values).on_conflict_do_nothing()


def insert_ignore(session: Session, model: Any, values: dict[str, Any]) -> None:
    session.execute(insert_ignore_stmt(session, model, values))
