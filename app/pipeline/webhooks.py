"""Webhooks from an outbox: the notification row is the outbox entry.

``notify`` writes the row and returns; delivery is its own step
(``deliver_webhook``, the actor of the same name), with its own schedule,
outside any message's retry budget. An attempt first *claims* the row (one
conditional UPDATE: still undelivered, not failed, due), so two messages for
the same row never POST twice at once; then it POSTs and records the
outcome: delivered, or the attempt, the error and the next due time, with
exponential backoff, until ``webhook_horizon_s`` after the notification
(default 24 h); after that the row is marked failed with the last reason.
A scheduled retry is a delayed message; if Redis loses it, the sweep sends
the overdue rows again (``overdue_webhooks``).
"""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request
from dataclasses import dataclass
from datetime import datetime, timedelta

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.db.models import Commit, Notification, Repository, utcnow
from app.errors import CovworkerError
from app.services import Services
from app.settings import Settings

logger = logging.getLogger(__name__)

#: A claimed attempt owns its row this long past the POST timeout; if its
#: worker dies, the row is due again after that.
CLAIM_MARGIN_S = 30.0
#: A row due this long ago has lost its scheduled message: the sweep resends it.
OVERDUE_AFTER_S = 60.0
#: Most overdue rows the sweep resends at once.
OVERDUE_BATCH = 1000


class WebhookFailed(CovworkerError):
    """The webhook did not answer 2xx."""


@dataclass(frozen=True, slots=True)
class Attempt:
    """What one ``deliver_webhook`` did."""

    #: False if there was nothing to do (delivered, failed for good, not due, no URL).
    attempted: bool
    delivered: bool = False
    #: Seconds until the next attempt is due; None if there is none.
    retry_in_s: float | None = None
    error: str | None = None


def backoff_s(settings: Settings, attempts: int) -> float:
    """Delay after the ``attempts``-th failed attempt: doubling, capped."""
    first, cap = settings.webhook_min_backoff_s, settings.webhook_max_backoff_s
    return float(min(first * 2 ** min(attempts - 1, 40), cap))


def deliver_webhook(
    services: Services, notification_id: int, now: datetime | None = None
) -> Attempt:
    """One attempt at the webhook of notification ``notification_id``, if it is due."""
    settings = services.settings
    now = now or utcnow()
    claimed_until = now + timedelta(seconds=settings.webhook_timeout_s + CLAIM_MARGIN_S)
    with services.sessions.begin() as session:
        claimed = session.execute(
            sa.update(Notification)
            .where(Notification.id == notification_id, *_pending(), _due(now))
            .values(
                webhook_next_at=claimed_until, webhook_attempts=Notification.webhook_attempts + 1
            )
            .returning(Notification.webhook_attempts)
        ).first()
        if claimed is None:
            return Attempt(attempted=False)
        attempts = int(claimed[0])
        note, repo, sha = _row(session, notification_id)
    url = note.webhook_url or ""
    try:
        _post(url, _payload(repo, sha, note), settings.webhook_timeout_s)
    except WebhookFailed as exc:
        services.metrics.webhook("failed")
        return _failed(services, note, attempts, str(exc))
    services.metrics.webhook("delivered")
    with services.sessions.begin() as session:
        session.execute(
            sa.update(Notification)
            .where(Notification.id == notification_id)
            .values(webhook_delivered_at=utcnow(), webhook_next_at=None, webhook_error=None)
        )
    logger.info("Webhook of notification %s delivered (attempt %s).", notification_id, attempts)
    return Attempt(attempted=True, delivered=True)


def overdue_webhooks(session: Session, now: datetime) -> list[int]:
    """Undelivered rows due for a while: their scheduled message was lost."""
    return list(
        session.scalars(
            sa.select(Notification.id)
            .where(*_pending(), _due(now - timedelta(seconds=OVERDUE_AFTER_S)))
            .order_by(Notification.id)
            .limit(OVERDUE_BATCH)
        )
    )


def _pending() -> tuple[sa.ColumnElement[bool], ...]:
    return (
        Notification.webhook_url.is_not(None),
        Notification.webhook_delivered_at.is_(None),
        Notification.webhook_failed_at.is_(None),
    )


def _due(at: datetime) -> sa.ColumnElement[bool]:
    return sa.or_(Notification.webhook_next_at.is_(None), Notification.webhook_next_at <= at)


def _row(session: Session, notification_id: int) -> tuple[Notification, str, str]:
    row = session.execute(
        sa.select(Notification, Repository.name, Commit.sha)
        .join(Commit, Commit.id == Notification.commit_id)
        .join(Repository, Repository.id == Commit.repository_id)
        .where(Notification.id == notification_id)
    ).one()
    session.expunge(row[0])
    return row[0], row[1], row[2]


def _failed(services: Services, note: Notification, attempts: int, reason: str) -> Attempt:
    settings, now = services.settings, utcnow()
    created = (
        note.created_at if note.created_at.tzinfo else note.created_at.replace(tzinfo=now.tzinfo)
    )
    give_up = now - created >= timedelta(seconds=settings.webhook_horizon_s)
    retry_in = None if give_up else backoff_s(settings, attempts)
    values: dict[str, object] = {"webhook_error": reason[:2000]}
    if retry_in is None:
        values.update(webhook_failed_at=now, webhook_next_at=None)
        logger.warning(
            "Webhook of notification %s failed for good after %s attempts: %s",
            note.id,
            attempts,
            reason,
        )
    else:
        values["webhook_next_at"] = now + timedelta(seconds=retry_in)
        logger.warning(
            "Webhook of notification %s: attempt %s failed (%s); next in %.1f s.",
            note.id,
            attempts,
            reason,
            retry_in,
        )
    with services.sessions.begin() as session:
        session.execute(sa.update(Notification).where(Notification.id == note.id).values(**values))
    return Attempt(attempted=True, retry_in_s=retry_in, error=reason)


def _payload(repo: str, sha: str, note: Notification) -> dict[str, object]:
    return {
        "repository": repo,
        "commit": sha,
        "report_version": note.report_version,
        "totals": note.totals,
        "uploads_merged": note.uploads_merged,
        "uploads_errored": note.uploads_errored,
        "comparison": note.comparison,  # the change against the base (app/web/delta.py)
        "test_results": note.test_results,  # totals and failures (app/testresults/summary.py)
    }


def _post(url: str, payload: dict[str, object], timeout: float) -> None:
    if not url.startswith(("http://", "https://")):
        raise WebhookFailed(f"webhook URL {url!r} is not http(s)")
    request = urllib.request.Request(
        url,
        data=json.dumps(payload).encode(),
        headers={"Content-Type": "application/json", "User-Agent": "covworker"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status = response.status
    except urllib.error.HTTPError as exc:
        raise WebhookFailed(f"webhook {url} answered {exc.code}") from exc
    except OSError as exc:
        raise WebhookFailed(f"webhook {url} failed: {exc}") from exc
    if not 200 <= status < 300:
        raise WebhookFailed(f"webhook {url} answered {status}")
