"""The raw facts of one run, read back from PostgreSQL and the run's Redis keys."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from app.db.models import CommitReport, Notification, Upload, merged_upload_ids
from app.ingest.accept import Accepted
from app.runtime.services import Services


@dataclass(frozen=True)
class CommitFacts:
    commitid: int
    upload_ids: list[int]
    #: ``merged_upload_ids``: every upload merged, once per merge.
    merged_ids: list[int]
    report_version: int
    #: Wall times (epoch seconds) of the commit's notifications.
    notified_at: list[float]
    #: Wall time the last upload of the commit was processed (by a worker).
    last_processed_at: float | None
    #: ``burst``: when the finisher messages were sent (all uploads processed by then).
    released_at: float | None
    stats: dict[str, int]


@dataclass(frozen=True)
class RunFacts:
    strategy: str
    uploads: int
    started: float
    settled_at: float
    timed_out: bool
    #: Finisher deliveries: commit ``k``, wall ``t0``/``t1``, outcome ``o``, pid ``p``.
    deliveries: list[dict[str, Any]]
    #: Intervals in which an admitted finisher ran: commit ``k``, ``t0``, ``t1``.
    holders: list[dict[str, Any]]
    #: Notify deliveries that ran: commit ``k``, message created ``q``, ``t0``/``t1``.
    notifies: list[dict[str, Any]]
    redis_commands: int
    #: CPU seconds of every worker process, boot to its last delivery, summed.
    worker_cpu_s: float
    #: Of ``worker_cpu_s``, what the deliveries' own threads spent in them (every actor).
    worker_delivery_cpu_s: float
    #: Each worker process's peak RSS, bytes, by pid.
    worker_rss_by_pid: dict[int, int]
    dead_lettered: int
    commits: list[CommitFacts]

    @property
    def worker_peak_rss(self) -> int:
        """The largest peak RSS of a worker process, bytes."""
        return max(self.worker_rss_by_pid.values(), default=0)


def commit_facts(services: Services, accepted: Accepted, released_at: float | None) -> CommitFacts:
    with services.sessions() as session:
        report = session.execute(
            sa.select(CommitReport.version).where(CommitReport.commit_id == accepted.commitid)
        ).one()
        merged_ids = merged_upload_ids(session, accepted.commitid)
        notified = session.scalars(
            sa.select(Notification.created_at)
            .where(Notification.commit_id == accepted.commitid)
            .order_by(Notification.created_at)
        ).all()
        last_processed = session.scalar(
            sa.select(sa.func.max(Upload.processed_at)).where(Upload.commit_id == accepted.commitid)
        )
    return CommitFacts(
        commitid=accepted.commitid,
        upload_ids=list(accepted.upload_ids),
        merged_ids=merged_ids,
        report_version=int(report.version),
        notified_at=[n.timestamp() for n in notified],
        last_processed_at=last_processed.timestamp() if last_processed else None,
        released_at=released_at,
        stats=services.state.stats(accepted.repoid, accepted.commitid),
    )
