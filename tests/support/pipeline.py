"""Pipeline steps driven directly, with the messages they send recorded.

Unit tests run them on fakeredis + SQLite; integration tests on real Redis
+ PostgreSQL. Either way the code under test is the production code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import fakeredis
import redis

from app.db.migrate import upgrade
from app.ingest.accept import Accepted, accept_uploads
from app.notify.notifier import NotifyResult, notify_commit
from app.pipeline.finisher import FinisherOutcome, finish_commit
from app.pipeline.processor import process_upload
from app.recovery import sweeper
from app.runtime.services import Services
from app.settings import Settings
from tests.support.synthetic import ci_matrix

#: The queues of a worker with the default settings (``Settings().queue_names``).
DEFAULT_QUEUES = ("covworker", "covworker.finish", "covworker.bulk")


def sqlite_settings(tmp_path: Path, **overrides: Any) -> Settings:
    return Settings(
        redis_url="redis://unused",
        database_url=f"sqlite:///{tmp_path / 'covworker.db'}",
        **overrides,
    )


def unit_services(tmp_path: Path, **overrides: Any) -> Services:
    """fakeredis (with Lua) + a migrated SQLite file."""
    return fakeredis_services(sqlite_settings(tmp_path, **overrides))


def fakeredis_services(settings: Settings) -> Services:
    """fakeredis (with Lua, a server of its own) + the database of ``settings``,
    migrated: the unit tests', and the in-process benchmarks' on PostgreSQL."""
    upgrade(settings.database_url)
    client = fakeredis.FakeRedis(server=fakeredis.FakeServer())
    return Services.from_settings(settings, redis_client=client)


def real_services(redis_url: str, pg_url: str, namespace: str, **overrides: Any) -> Services:
    """Real Redis + a fresh, migrated PostgreSQL database."""
    settings = Settings(redis_url=redis_url, database_url=pg_url, namespace=namespace, **overrides)
    upgrade(settings.database_url)
    return Services.from_settings(settings, redis_client=redis.Redis.from_url(redis_url))


@dataclass
class Outbox:
    """Messages the steps would have sent, in order."""

    processor: list[int] = field(default_factory=list)
    #: Those of ``processor`` sent to the bulk queue (beyond their commit's share).
    bulk: list[int] = field(default_factory=list)
    finisher: list[tuple[int, int]] = field(default_factory=list)
    #: Finishers sent ahead, on the finisher queue (the commit's last upload in flight).
    finisher_ahead: list[tuple[int, int]] = field(default_factory=list)
    notify: list[tuple[int, int]] = field(default_factory=list)

    def send_processor(self, upload_id: int, /, *, bulk: bool = False) -> None:
        self.processor.append(upload_id)
        if bulk:
            self.bulk.append(upload_id)

    def send_finisher(self, repoid: int, commitid: int) -> None:
        self.finisher.append((repoid, commitid))

    def send_finisher_ahead(self, repoid: int, commitid: int) -> None:
        self.finisher_ahead.append((repoid, commitid))

    def send_notify(self, repoid: int, commitid: int) -> None:
        self.notify.append((repoid, commitid))


@dataclass
class Pipeline:
    services: Services
    outbox: Outbox = field(default_factory=Outbox)

    def upload(
        self, reports: list[tuple[str, bytes]], repo: str = "acme/web", sha: str = "a" * 40
    ) -> Accepted:
        return accept_uploads(self.services, repo, sha, reports)

    def process(self, upload_id: int) -> str:
        return process_upload(self.services, upload_id, self.outbox.send_finisher)

    def process_routed(self, upload_id: int) -> str:
        """As ``process``, with finishers sent ahead recorded in ``outbox.finisher_ahead``."""
        return process_upload(
            self.services, upload_id, self.outbox.send_finisher, self.outbox.send_finisher_ahead
        )

    def finish(self, repoid: int, commitid: int) -> FinisherOutcome:
        return finish_commit(
            self.services,
            repoid,
            commitid,
            send_notify=self.outbox.send_notify,
            send_processor=self.outbox.send_processor,
        )

    def notify(self, repoid: int, commitid: int) -> NotifyResult:
        return notify_commit(self.services, repoid, commitid)

    def sweep(
        self, older_than_s: float | None = None, now: datetime | None = None
    ) -> sweeper.SweepResult:
        """A sweep whose re-drives go to the outbox; ``older_than_s`` None is
        the default age (600 s), as ``covworker sweep`` runs it; ``now`` a
        sweep run later than the clock says."""
        return sweeper.sweep(
            self.services,
            send_processor=self.outbox.send_processor,
            send_finisher=self.outbox.send_finisher,
            send_notify=self.outbox.send_notify,
            now=now,
            older_than_s=older_than_s,
        )

    def lose_redis_state(self) -> None:
        """Delete every key of this pipeline's namespace, as a Redis restart
        without persistence would."""
        client = self.services.redis
        keys = list(client.scan_iter(match=f"{self.services.settings.namespace}:*", count=1000))
        if keys:
            client.delete(*keys)

    def settle(
        self, uploads: int = 1, repo: str = "acme/web", sha: str = "a" * 40
    ) -> tuple[int, int]:
        """Upload a CI matrix of ``uploads`` small reports, process each and
        merge them (not notified); the commit's (repoid, commitid)."""
        accepted = self.upload(ci_matrix(uploads, files=1, lines=5), repo=repo, sha=sha)
        for u in accepted.upload_ids:
            self.process(u)
        self.finish(accepted.repoid, accepted.commitid)
        return accepted.repoid, accepted.commitid
