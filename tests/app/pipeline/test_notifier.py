"""notify: one notification per settled report version, webhook with retries."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from app.db.models import Notification, Repository
from app.pipeline.notifier import WebhookFailed
from app.synthetic import ci_matrix
from tests.support.pipeline import Pipeline

pytestmark = pytest.mark.timeout(60)


def notifications(pipeline: Pipeline, commitid: int) -> list[Notification]:
    with pipeline.services.sessions() as session:
        return list(
            session.scalars(sa.select(Notification).where(Notification.commit_id == commitid))
        )


def settled_commit(pipeline: Pipeline, n: int = 3) -> tuple[int, int]:
    accepted = pipeline.upload(ci_matrix(n, files=1, lines=5))
    for u in accepted.upload_ids:
        pipeline.process(u)
    pipeline.finish(accepted.repoid, accepted.commitid)
    return accepted.repoid, accepted.commitid


def test_a_settled_commit_is_notified_once_per_report_version(pipeline: Pipeline) -> None:
    repoid, commitid = settled_commit(pipeline)

    first = pipeline.notify(repoid, commitid)
    again = pipeline.notify(repoid, commitid)

    assert first.created and not again.created and first.version == again.version == 1
    rows = notifications(pipeline, commitid)
    assert len(rows) == 1 and rows[0].uploads_merged == 3 and rows[0].totals["lines"] == 5


def test_a_new_merge_gets_its_own_notification(pipeline: Pipeline) -> None:
    repoid, commitid = settled_commit(pipeline)
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
    repoid, commitid = settled_commit(real_pipeline)
    barrier = threading.Barrier(8)
    created = []

    def notify() -> None:
        barrier.wait()
        created.append(real_pipeline.notify(repoid, commitid).created)

    threads = [threading.Thread(target=notify) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

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
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    thread = threading.Thread(target=server.serve_forever)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/hook"
    server.shutdown()
    thread.join()
    server.server_close()


def test_the_webhook_gets_the_totals_and_a_failed_post_is_retried_once_delivered(
    pipeline: Pipeline, webhook: str
) -> None:
    repoid, commitid = settled_commit(pipeline)
    with pipeline.services.sessions.begin() as session:
        session.execute(sa.update(Repository).values(webhook_url=webhook))
    Hook.fail_next = 1

    with pytest.raises(WebhookFailed, match="answered 503"):
        pipeline.notify(repoid, commitid)  # Dramatiq retries this message
    retried = pipeline.notify(repoid, commitid)
    after = pipeline.notify(repoid, commitid)

    assert retried.webhook_delivered and not after.webhook_delivered
    assert len(Hook.received) == 1
    body = Hook.received[0]
    assert body["repository"] == "acme/web" and body["report_version"] == 1
    assert body["totals"]["lines"] == 5  # type: ignore[index]
    assert len(notifications(pipeline, commitid)) == 1
