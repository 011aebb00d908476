"""What the two outboxes (webhooks, :mod:`app.notify.webhooks`; pull-request
feedback, :mod:`app.feedback.delivery`) share: when a row is due, when a
claimed attempt lapses, which rows lost their scheduled message, and how
long to wait after a failure until the horizon, past which the row fails.

Each outbox keeps its own table, its own reasons and its own test of a
newer row that supersedes one (any newer notification of the commit; a
newer version of the same status or comment); the timing rules live here
once, so both back off, give up and resend lost rows alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.db.models import as_utc

#: A claimed attempt owns its row this long past its call's timeout; if its
#: worker dies, the row is due again after that.
CLAIM_MARGIN_S = 30.0
#: A row due this long ago has lost its scheduled message: the sweep resends it.
OVERDUE_AFTER_S = 60.0
#: Most overdue rows the sweep resends at once.
OVERDUE_BATCH = 1000


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Doubling backoff from ``min_backoff_s`` up to ``max_backoff_s``, tried
    until ``horizon_s`` after the row was written."""

    min_backoff_s: float
    max_backoff_s: float
    horizon_s: float

    def backoff_s(self, attempts: int) -> float:
        """Delay after the ``attempts``-th failed attempt: doubling, capped."""
        return float(min(self.min_backoff_s * 2 ** min(attempts - 1, 40), self.max_backoff_s))

    def retry_in_s(
        self, created: datetime, now: datetime, attempts: int, wait_s: float = 0.0
    ) -> float | None:
        """Seconds until the next attempt (at least ``wait_s``, a rate limit's own
        wait); None once the horizon has passed: the row fails for good."""
        if now - as_utc(created) >= timedelta(seconds=self.horizon_s):
            return None
        return max(self.backoff_s(attempts), wait_s)


def claim_until(now: datetime, timeout_s: float) -> datetime:
    """How long a claimed attempt whose calls time out after ``timeout_s`` owns its row."""
    return now + timedelta(seconds=timeout_s + CLAIM_MARGIN_S)


def due(next_at: Any, at: datetime) -> sa.ColumnElement[bool]:
    """A row is due: never scheduled, or scheduled for ``at`` or before."""
    return sa.or_(next_at.is_(None), next_at <= at)


def overdue(session: Session, row_id: Any, next_at: Any, pending: Any, now: datetime) -> list[int]:
    """Pending rows due for a while (their scheduled message was lost), oldest first."""
    return list(
        session.scalars(
            sa.select(row_id)
            .where(*pending, due(next_at, now - timedelta(seconds=OVERDUE_AFTER_S)))
            .order_by(row_id)
            .limit(OVERDUE_BATCH)
        )
    )
