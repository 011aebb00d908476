"""``notify``: one notification per settled state of a commit (I6).

Settled means no upload of the commit is still uploaded, processing or
processed in Postgres (the source of truth; Redis only says when to look).
A settled state is (report version, uploads merged, uploads failed): an
upload that fails after the commit was notified changes it without a new
report version, and is notified too. The unique key on those four columns
of the notifications table is the fence: a second ``notify`` of the same
state finds the row and writes nothing. The row is also the webhook's outbox
entry: ``notify`` never POSTs; it names the row whose webhook is pending and
``app.notify.webhooks`` delivers it on a schedule of its own.

With pull-request feedback on (a provider has credentials), the same
transaction writes the settled version's ``prepare`` row
(:func:`app.feedback.delivery.arm_prepare`): a worker that dies after the
notification committed cannot lose the pull request's feedback; the row's
message, if lost, is re-sent by the sweep (``pull_deliveries.overdue``).

Whether a commit's current settled state was notified is decided here, in
Postgres (``needs_notification``); the ``notified`` marker in Redis is only a
cache of it, so a stale marker (Redis lost its last writes) never suppresses
a notification.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import sqlalchemy as sa

from app.db.engine import conflict_insert
from app.db.models import (
    Commit,
    CommitReport,
    Notification,
    Repository,
    UploadState,
    is_settled,
)
from app.errors import UnknownEntity
from app.feedback.rows import arm_prepare, drop_orphan_pending, space_prepare
from app.merge.file_lines import complete_pages
from app.queries import commit_delta, uploads_by_state
from app.runtime.metrics import last_processed_at
from app.runtime.services import Services
from app.testresults.summary import settled_summary

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class NotifyResult:
    settled: bool
    created: bool
    version: int
    #: The notification whose webhook is still to be delivered
    #: (``app.notify.webhooks``), if any.
    webhook_pending: int | None = None
    #: The pull-request ``prepare`` row still to be delivered, if any.
    prepare_pending: int | None = None
    #: Seconds it waits (``app.feedback.rows.space_prepare``).
    prepare_delay_s: float = 0.0


@dataclass(frozen=True, slots=True)
class SettledState:
    """What a notification tells: the report version and the final uploads."""

    version: int
    merged: int
    failed: int

    @classmethod
    def of(cls, version: int | None, counts: dict[str, int]) -> SettledState:
        """The state of report ``version`` (None: no report) with the uploads ``counts``."""
        return cls(
            version or 0, counts.get(UploadState.MERGED, 0), counts.get(UploadState.ERROR, 0)
        )


def settled_state(session: sa.orm.Session, commitid: int) -> SettledState | None:
    """The commit's settled state now, or None while an upload is in flight."""
    counts = uploads_by_state(session, commitid)
    if not is_settled(counts):
        return None
    version = session.scalar(
        sa.select(CommitReport.version).where(CommitReport.commit_id == commitid)
    )
    return SettledState.of(version, counts)


def _notification_of(
    session: sa.orm.Session, commitid: int, settled: SettledState
) -> Notification | None:
    return session.scalar(
        sa.select(Notification).where(
            Notification.commit_id == commitid,
            Notification.report_version == settled.version,
            Notification.uploads_merged == settled.merged,
            Notification.uploads_errored == settled.failed,
        )
    )


def needs_notification(services: Services, commitid: int) -> bool:
    """True if the commit is settled and that state has no notification yet,
    as Postgres says (one index scan of the commit's uploads by state)."""
    with services.sessions() as session:
        settled = settled_state(session, commitid)
        return settled is not None and _notification_of(session, commitid, settled) is None


def notify_commit(services: Services, repoid: int, commitid: int) -> NotifyResult:
    """Write the commit's notification for its settled state, unless it exists.

    Ten statements in one transaction for a commit without a base (three
    more with pull-request feedback on: the ``prepare`` row): the
    finisher that settles a commit runs this in its own delivery, and a
    worker process compiles each statement once (the first notification of
    a process costs about twice the next ones)."""
    with services.sessions.begin() as session:
        row = session.execute(
            sa.select(Commit, Repository.webhook_url)
            .join(Repository, Repository.id == Commit.repository_id)
            .where(Commit.id == commitid, Commit.repository_id == repoid)
        ).first()
        if row is None:
            raise UnknownEntity(f"commit {commitid} of repository {repoid} does not exist")
        commit, webhook_url = row
        counts = uploads_by_state(session, commitid)
        if not is_settled(counts):
            logger.debug("Commit %s:%s is not settled yet.", repoid, commitid)
            return NotifyResult(settled=False, created=False, version=-1)
        report = session.execute(
            sa.select(
                CommitReport.version,
                CommitReport.totals,
                CommitReport.file_totals.is_not(None).label("pages_stored"),
            ).where(CommitReport.commit_id == commitid)
        ).first()
        settled = SettledState.of(report.version if report is not None else None, counts)
        version = settled.version
        existing = _notification_of(session, commitid, settled)
        created, webhook_pending = False, None
        if existing is None:
            if report is not None and not report.pages_stored:
                # A settled version's pages read stored totals and windows; the
                # pass that merged it stored none if uploads were in flight then.
                complete_pages(session, commitid)
            # One statement: a concurrent notify of the same state that wins
            # the unique key leaves nothing to insert (no savepoint to catch it).
            inserted = session.execute(
                conflict_insert(session, Notification)
                .values(
                    commit_id=commitid,
                    report_version=version,
                    totals=dict(report.totals) if report is not None and report.totals else {},
                    uploads_merged=settled.merged,
                    uploads_errored=settled.failed,
                    webhook_url=webhook_url,
                    comparison=commit_delta(session, commit),
                    test_results=settled_summary(
                        session, repoid, commitid, services.settings.testresults_flake_runs
                    ),
                )
                .on_conflict_do_nothing()
                .returning(Notification.id)
            ).first()
            created = inserted is not None
            if inserted is not None and webhook_url:
                webhook_pending = int(inserted[0])
        elif (
            existing.webhook_url
            and existing.webhook_delivered_at is None
            and existing.webhook_failed_at is None
        ):
            webhook_pending = existing.id
        prepare_pending, prepare_delay_s = None, 0.0
        if services.providers.by_service:  # in this transaction: never a notification without it
            if created:
                drop_orphan_pending(session, commitid, version)
            prepare_pending = arm_prepare(
                session, commitid, version, settled.merged + settled.failed, again=created
            )
            if created and prepare_pending is not None:
                prepare_delay_s = space_prepare(
                    session,
                    prepare_pending,
                    commitid,
                    version,
                    services.settings.pr_feedback_spacing_s,
                )
        if created:
            services.metrics.notified(last_processed_at(session, commitid))

    services.state.mark_notified(repoid, commitid, version)
    if created:
        logger.info(
            "Commit %s:%s settled at report version %s (%s merged, %s failed): notified.",
            repoid,
            commitid,
            version,
            settled.merged,
            settled.failed,
        )
    return NotifyResult(
        settled=True,
        created=created,
        version=version,
        webhook_pending=webhook_pending,
        prepare_pending=prepare_pending,
        prepare_delay_s=prepare_delay_s,
    )
