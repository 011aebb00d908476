"""The words of the ``pull_deliveries`` table, and what the surfaces read of it.

A row's target names what it writes (``prepare``, ``pending``,
``status:<context>``, ``comment``), marked ``|pull-<number>-<key>`` when a
pull request's event asked for it; its state is one of ``pending``, ``sent``,
``superseded``, ``skipped``, ``failed``. ``covworker status``, the pages and
``/-/ops`` read a commit's feedback and the failures here; the rows are
written by :mod:`app.feedback`."""

from __future__ import annotations

import hashlib
import re
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.db import outbox
from app.db.models import (
    Commit,
    PullDelivery,
    Repository,
)

PREPARE = "prepare"


#: ``pending`` statuses while uploads of the commit's next version are in flight.
PENDING_STATUSES = "pending"


COMMENT = "comment"


STATUS_PREFIX = "status:"


PENDING, SENT, SUPERSEDED, SKIPPED, FAILED = "pending", "sent", "superseded", "skipped", "failed"


#: The mark of a pull-request event's rows: ``|pull-<number>-<16 hex digits>``.
_ROUND = re.compile(r"\|pull-[0-9]+-[0-9a-f]{16}$")


def status_target(context: str) -> str:
    return STATUS_PREFIX + context


def comment_key(repository_id: int, number: int) -> str:
    """``pull_sent``'s key of a pull request's comment."""
    return f"comment:{repository_id}:{number}"


def pull_round(number: int, base_branch: str, base_sha: str | None) -> str:
    """The mark of the rows a pull request's event asks for at its base."""
    key = hashlib.sha256(f"{base_branch}\0{base_sha or ''}".encode()).hexdigest()[:16]
    return f"|pull-{number}-{key}"


def round_of(target: str) -> str:
    """The pull-request event mark of a row's target ('' for a version's own rows)."""
    found = _ROUND.search(target)
    return found[0] if found else ""


def kind_of(target: str) -> str:
    """A row's target without its pull-request event mark."""
    return target[: len(target) - len(round_of(target))]


def overdue(session: Session, now: datetime) -> list[int]:
    """Pending rows due for a while: their scheduled message was lost."""
    return outbox.overdue(
        session, PullDelivery.id, PullDelivery.next_at, (PullDelivery.state == PENDING,), now
    )


def commit_feedback(session: Session, commit_id: int) -> dict[str, Any] | None:
    """The newest version's feedback of a commit: what it found and each row's state.

    For ``covworker status``, the commit page and ``/-/ops``.
    """
    rows = list(
        session.scalars(
            sa.select(PullDelivery)
            .where(PullDelivery.commit_id == commit_id)
            .order_by(PullDelivery.report_version.desc(), PullDelivery.id)
        )
    )
    if not rows:
        return None
    version = rows[0].report_version
    newest = [r for r in rows if r.report_version == version]
    # The version's own prepare, or the last a pull-request event asked for, and its rows.
    prepares = [r for r in newest if kind_of(r.target) == PREPARE]
    sent = [r for r in prepares if r.state == SENT]
    prepare = max(sent or prepares, key=lambda r: r.id) if prepares else None
    mark = round_of(prepare.target) if prepare is not None else ""
    return {
        "report_version": version,
        "info": dict(prepare.payload) if prepare is not None else {},
        "deliveries": [
            {
                "target": kind_of(r.target),
                "state": r.state,
                "attempts": r.attempts,
                "error": r.error,
                "next_at": r.next_at.isoformat() if r.next_at and r.state == PENDING else None,
            }
            for r in newest
            if round_of(r.target) == mark
        ],
    }


def delivery_counts(session: Session) -> dict[str, int]:
    """Rows by state, for ``/-/ops``."""
    return {
        str(state): int(n)
        for state, n in session.execute(
            sa.select(PullDelivery.state, sa.func.count()).group_by(PullDelivery.state)
        ).all()
    }


def recent_failures(session: Session, limit: int = 20) -> list[dict[str, Any]]:
    """The newest failed or retrying rows, with their reasons, for ``/-/ops``."""
    rows = session.execute(
        sa.select(PullDelivery, Commit.sha, Repository.name)
        .join(Commit, Commit.id == PullDelivery.commit_id)
        .join(Repository, Repository.id == Commit.repository_id)
        .where(PullDelivery.error.is_not(None), PullDelivery.state.in_((PENDING, FAILED)))
        .order_by(PullDelivery.id.desc())
        .limit(limit)
    ).all()
    return [
        {
            "repository": name,
            "commit": sha,
            "report_version": d.report_version,
            "target": d.target,
            "state": d.state,
            "attempts": d.attempts,
            "error": d.error,
        }
        for d, sha, name in rows
    ]
