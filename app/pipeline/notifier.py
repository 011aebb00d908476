"""``notify``: one notification per settled report version (I6).

Settled means no upload of the commit is still uploaded, processing or
processed in Postgres (the source of truth; Redis only says when to look).
The unique key (commit, report version) on the notifications table is the
fence: a second ``notify`` for the same version finds the row and writes
nothing. The row is also the webhook's outbox entry: ``notify`` never POSTs;
it names the row whose webhook is pending and ``app.pipeline.webhooks``
delivers it on a schedule of its own.
"""

from __future__ import annotations

import logging
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
)
from app.errors import UnknownEntity
from app.metrics import last_processed_at
from app.services import Services
from app.testresults.summary import settled_summary
from app.web.delta import commit_delta

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class NotifyResult:
    settled: bool
    created: bool
    version: int
    #: The notification whose webhook is still to be delivered
    #: (``app.pipeline.webhooks``), if any.
    webhook_pending: int | None = None


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
                test_results=settled_summary(
                    session, repoid, commitid, services.settings.testresults_flake_runs
                ),
            )
            try:
                with session.begin_nested():
                    session.add(existing)
            except sa.exc.IntegrityError:  # a concurrent notify won the unique key
                created = False
                existing = None
        if created:
            services.metrics.notified(last_processed_at(session, commitid))
        webhook_pending = (
            existing.id
            if existing is not None
            and existing.webhook_url
            and existing.webhook_delivered_at is None
            and existing.webhook_failed_at is None
            else None
        )

    services.state.mark_notified(repoid, commitid, version)
    if created:
        logger.info(
            "Commit %s:%s settled at report version %s: notified.", repoid, commitid, version
        )
    return NotifyResult(
        settled=True, created=created, version=version, webhook_pending=webhook_pending
    )
