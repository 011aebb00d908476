"""notify: one notification per settled report version, webhook with retries."""

from __future__ import annotations

import functools
import http.server
import json
from collections.abc import Iterator
from datetime import timedelta

import pytest
import sqlalchemy as sa

from app.db import pull_deliveries
from app.db.models import Notification, PullDelivery, Repository, utcnow
from app.notify.notifier import notify_commit
from app.notify.webhooks import deliver_webhook
from app.providers import CallCounter, Providers
from app.providers.github import GitHub, TokenAuth
from app.providers.http import ProviderHttp
from tests.support.faults.points import NOTIFY_MARKED, Fault, FaultPoints, install
from tests.support.loopback import serving
from tests.support.pipeline import Pipeline
from tests.support.synthetic import ci_matrix
from tests.support.threads import all_at_once

pytestmark = pytest.mark.timeout(60)


def notifications(pipeline: Pipeline, commitid: int) -> list[Notification]:
    with pipeline.services.sessions() as session:
        return list(
            session.scalars(sa.select(Notification).where(Notification.commit_id == commitid))
        )


def test_a_settled_commit_is_notified_once_per_report_version(pipeline: Pipeline) -> None:
    repoid, commitid = pipeline.settle(3)

    first = pipeline.notify(repoid, commitid)
    again = pipeline.notify(repoid, commitid)

    assert first.created and not again.created and first.version == again.version == 1
    rows = notifications(pipeline, commitid)
    assert len(rows) == 1 and rows[0].uploads_merged == 3 and rows[0].totals["lines"] == 5


def test_a_new_merge_gets_its_own_notification(pipeline: Pipeline) -> None:
    repoid, commitid = pipeline.settle(3)
    pipeline.notify(repoid, commitid)
    more = pipeline.upload(ci_matrix(1, files=1, lines=5))
    pipeline.process(more.upload_ids[0])
    pipeline.finish(repoid, commitid)

    pipeline.notify(repoid, commitid)

    assert sorted(n.report_version for n in notifications(pipeline, commitid)) == [1, 2]


def test_a_commit_with_uploads_in_flight_is_not_notified(pipeline: Pipeline) -> None:
    accepted = pipeline.upload(ci_matrix(2, files=1, lines=5))
    pipeline.process(accepted.upload_ids[0])

    result = pipeline.notify(accepted.repoid, accepted.commitid)

    assert not result.settled and notifications(pipeline, accepted.commitid) == []


@pytest.mark.integration
def test_concurrent_notifies_write_one_row(real_pipeline: Pipeline) -> None:
    repoid, commitid = real_pipeline.settle(3)

    results = all_at_once([functools.partial(real_pipeline.notify, repoid, commitid)] * 8)

    created = [result.created for result in results]
    assert len(created) == 8  # every thread finished its notify
    assert created.count(True) == 1 and len(notifications(real_pipeline, commitid)) == 1


class Hook(http.server.BaseHTTPRequestHandler):
    received: list[dict[str, object]] = []
    fail_next = 0

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if Hook.fail_next:
            Hook.fail_next -= 1
            self.send_response(503)
        else:
            Hook.received.append(body)
            self.send_response(204)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def webhook() -> Iterator[str]:
    Hook.received, Hook.fail_next = [], 0
    with serving(Hook) as base:
        yield f"{base}/hook"


def with_webhook(pipeline: Pipeline, url: str) -> None:
    # The receivers here listen on loopback, which only this setting lets through.
    pipeline.services.settings.webhook_allow_private = True
    with pipeline.services.sessions.begin() as session:
        session.execute(sa.update(Repository).values(webhook_url=url))


def test_notify_never_posts_it_leaves_the_webhook_in_the_outbox(
    pipeline: Pipeline, webhook: str
) -> None:
    repoid, commitid = pipeline.settle(3)
    with_webhook(pipeline, webhook)

    result = pipeline.notify(repoid, commitid)

    assert result.created and result.webhook_pending == notifications(pipeline, commitid)[0].id
    assert Hook.received == []


def test_a_failed_post_is_retried_on_its_own_schedule_until_delivered_once(
    pipeline: Pipeline, webhook: str
) -> None:
    repoid, commitid = pipeline.settle(3)
    with_webhook(pipeline, webhook)
    note = pipeline.notify(repoid, commitid).webhook_pending
    assert note is not None
    Hook.fail_next = 2
    services = pipeline.services

    first = deliver_webhook(services, note)
    assert not first.delivered and first.error and "answered 503" in first.error
    assert first.retry_in_s == services.settings.webhook_min_backoff_s
    assert not deliver_webhook(services, note).attempted  # not due yet: nothing posted
    later = utcnow() + timedelta(seconds=first.retry_in_s)
    second = deliver_webhook(services, note, now=later)
    assert second.retry_in_s == 2 * services.settings.webhook_min_backoff_s
    third = deliver_webhook(services, note, now=later + timedelta(seconds=second.retry_in_s))
    after = deliver_webhook(services, note, now=later + timedelta(days=1))

    assert third.delivered and not after.attempted
    assert len(Hook.received) == 1
    body = Hook.received[0]
    assert body["repository"] == "acme/web" and body["report_version"] == 1
    assert body["totals"]["lines"] == 5  # type: ignore[index]
    row = notifications(pipeline, commitid)[0]
    assert row.webhook_attempts == 3 and row.webhook_delivered_at is not None
    assert row.webhook_error is None


def test_a_webhook_failing_past_the_horizon_is_marked_failed_with_the_reason(
    pipeline: Pipeline, webhook: str
) -> None:
    repoid, commitid = pipeline.settle(3)
    with_webhook(pipeline, webhook + "/gone")
    note = pipeline.notify(repoid, commitid).webhook_pending
    assert note is not None
    Hook.fail_next = 1000
    horizon = pipeline.services.settings.webhook_horizon_s
    with pipeline.services.sessions.begin() as session:  # notified a horizon ago
        session.execute(
            sa.update(Notification).values(created_at=utcnow() - timedelta(seconds=horizon))
        )

    attempt = deliver_webhook(pipeline.services, note)

    assert attempt.attempted and attempt.retry_in_s is None
    row = notifications(pipeline, commitid)[0]
    assert row.webhook_failed_at is not None and row.webhook_delivered_at is None
    assert row.webhook_error and "answered 503" in row.webhook_error
    assert not deliver_webhook(pipeline.services, note, now=utcnow() + timedelta(days=2)).attempted


class WorkerDied(BaseException):
    """The worker's end, right where the fault point is: nothing after it runs."""


class DiesOnce(FaultPoints):
    """``notify.marked`` armed to end the worker the first time it is reached."""

    def __init__(self) -> None:
        super().__init__({NOTIFY_MARKED: Fault("kill", 0.0, 1)})
        self.died = False

    def hit(self, point: str) -> None:
        if point == NOTIFY_MARKED and not self.died:
            self.died = True
            raise WorkerDied(point)


@pytest.mark.integration
def test_a_worker_dying_once_the_notification_committed_leaves_the_pull_requests_prepare_row(
    real_pipeline: Pipeline,
) -> None:
    services = real_pipeline.services
    install(services, DiesOnce())
    repoid, commitid = real_pipeline.settle(2)
    # Feedback on from the notification; the provider is never reached in this
    # test (on before the merge, the merge would read the head's codecov.yml).
    counter = CallCounter()
    http = ProviderHttp("http://127.0.0.1:9", timeout_s=1, counter=counter)
    services.providers = Providers({"github": GitHub(http, TokenAuth("t"))}, counter)

    real_pipeline.outbox.notify.clear()  # the finisher's, run here:
    with pytest.raises(WorkerDied):  # the notification is in and marked; the worker is gone
        notify_commit(services, repoid, commitid)

    # What comes back: the finisher redelivered, then the sweep. The commit is
    # notified (Postgres says so), so neither notifies it again ...
    real_pipeline.finish(repoid, commitid)
    swept = real_pipeline.sweep(now=utcnow() + timedelta(hours=1))
    assert real_pipeline.outbox.notify == [] and swept.renotified == []
    # ... and the pull request's feedback was written with the notification:
    with services.sessions() as session:
        prepare = session.scalars(
            sa.select(PullDelivery).where(
                PullDelivery.commit_id == commitid, PullDelivery.target == pull_deliveries.PREPARE
            )
        ).one()
        lost = pull_deliveries.overdue(session, utcnow() + timedelta(minutes=5))
    assert (prepare.report_version, prepare.state) == (1, "pending")
    assert lost == [prepare.id]  # the sweep actor sends its message again
    assert counter.counts == {}
