"""``notify``: one notification per settled report version (I6).

Settled means no upload of the commit is still uploaded, processing or
processed in Postgres (the source of truth; Redis only says when to look).
The unique key (commit, report version) on the notifications table is the
fence: a second ``notify`` for the same version finds the row and writes
nothing. The webhook POST is retried through the normal retry budget; a
retry re-posts only while the row says the webhook was not delivered.
"""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request
from dataclasses import dataclass

import sqlalchemy as sa

from app.db.models import (
    PENDING_STATES,
    Commit,
    CommitReport,
    Notification,
    Repository,
    Upload,
    UploadState,
    utcnow,
)
from app.errors import CovworkerError, UnknownEntity
from app.services import Services
from app.web.delta import commit_delta

logger = logging.getLogger(__name__)


class WebhookFailed(CovworkerError):
    """The webhook did not answer 2xx; the notify message is retried."""


@dataclass(frozen=True, slots=True)
class NotifyResult:
    settled: bool
    created: bool
    version: int
    webhook_delivered: bool = False


def notify_commit(services: Services, repoid: int, commitid: int) -> NotifyResult:
    with services.sessions.begin() as session:
        row = session.execute(
            sa.select(Commit, Repository)
            .join(Repository, Repository.id == Commit.repository_id)
            .where(Commit.id == commitid, Commit.repository_id == repoid)
        ).first()
        if row is None:
            raise UnknownEntity(f"commit {commitid} of repository {repoid} does not exist")
        commit, repo = row
        counts = dict(
            session.execute(
                sa.select(Upload.state, sa.func.count())
                .where(Upload.commit_id == commitid)
                .group_by(Upload.state)
            ).all()
        )
        if any(counts.get(s, 0) for s in PENDING_STATES):
            logger.debug("Commit %s:%s is not settled yet: %s", repoid, commitid, counts)
            return NotifyResult(settled=False, created=False, version=-1)
        report = session.scalar(sa.select(CommitReport).where(CommitReport.commit_id == commitid))
        version = report.version if report else 0
        existing = session.scalar(
            sa.select(Notification).where(
                Notification.commit_id == commitid, Notification.report_version == version
            )
        )
        created = existing is None
        if existing is None:
            existing = Notification(
                commit_id=commitid,
                report_version=version,
                totals=dict(report.totals) if report else {},
                uploads_merged=counts.get(UploadState.MERGED, 0),
                uploads_errored=counts.get(UploadState.ERROR, 0),
                webhook_url=repo.webhook_url,
                comparison=commit_delta(session, commit, services.limits),
            )
            try:
                with session.begin_nested():
                    session.add(existing)
            except sa.exc.IntegrityError:  # a concurrent notify won the unique key
                created = False
                existing = None
        notification_id = existing.id if existing is not None else None
        needs_webhook = (
            existing is not None and existing.webhook_url and existing.webhook_delivered_at is None
        )
        payload = _payload(repo.name, commit.sha, existing) if needs_webhook else None

    services.state.mark_notified(repoid, commitid, version)
    if created:
        logger.info(
            "Commit %s:%s settled at report version %s: notified.", repoid, commitid, version
        )
    if payload is None or notification_id is None:
        return NotifyResult(settled=True, created=created, version=version)

    url = str(payload.pop("_url"))
    _post(url, payload, services.settings.webhook_timeout_s)
    with services.sessions.begin() as session:
        session.execute(
            sa.update(Notification)
            .where(Notification.id == notification_id)
            .values(webhook_delivered_at=utcnow())
        )
    return NotifyResult(settled=True, created=created, version=version, webhook_delivered=True)


def _payload(repo: str, sha: str, note: Notification | None) -> dict[str, object]:
    assert note is not None
    return {
        "_url": note.webhook_url,
        "repository": repo,
        "commit": sha,
        "report_version": note.report_version,
        "totals": note.totals,
        "uploads_merged": note.uploads_merged,
        "uploads_errored": note.uploads_errored,
        "comparison": note.comparison,
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
