"""Webhooks: only public addresses, no redirects, signed bodies, no leaked
credentials, the newest settled state last, to the URL current when sent.

Every test runs on fakeredis + SQLite and on real Redis + PostgreSQL.
"""

from __future__ import annotations

import base64
import http.server
import json
import logging
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import timedelta

import pytest
import sqlalchemy as sa

from app.db.bases import remember_pull
from app.db.models import Commit, Notification, Repository, utcnow
from app.figures import commit_headline
from app.notify.webhooks import (
    SIGNATURE_HEADER,
    Attempt,
    WebhookRefused,
    check_address,
    deliver_webhook,
    sign,
)
from tests.support.loopback import serving
from tests.support.pipeline import Pipeline
from tests.support.synthetic import ci_matrix

pytestmark = pytest.mark.timeout(60)


@dataclass
class Receiver:
    """A webhook receiver on loopback: what it got, and what it answers."""

    url: str
    bodies: list[dict[str, object]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    #: Statuses to answer, in order; then 204.
    answers: list[int] = field(default_factory=list)
    location: str = ""


def _handler(receiver: Receiver) -> type[http.server.BaseHTTPRequestHandler]:
    """A handler recording what ``receiver`` gets and answering as it says."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers["Content-Length"]))
            receiver.headers.append(dict(self.headers.items()))
            status = receiver.answers.pop(0) if receiver.answers else 204
            if status < 300:
                receiver.bodies.append({"raw": raw.decode(), **json.loads(raw)})
            self.send_response(status)
            if 300 <= status < 400:
                self.send_header("Location", receiver.location)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    return Handler


@pytest.fixture
def receivers() -> Iterator[list[Receiver]]:
    """Two receivers on loopback (a webhook moves from one to the other)."""
    with ExitStack() as stack:
        found: list[Receiver] = []
        for _ in range(2):
            receiver = Receiver(url="")
            receiver.url = f"{stack.enter_context(serving(_handler(receiver)))}/hook"
            found.append(receiver)
        yield found


def set_webhook(pipeline: Pipeline, url: str, *, allow_private: bool = True) -> None:
    pipeline.services.settings.webhook_allow_private = allow_private
    with pipeline.services.sessions.begin() as session:
        session.execute(sa.update(Repository).values(webhook_url=url))


def row(pipeline: Pipeline, notification_id: int) -> Notification:
    with pipeline.services.sessions() as session:
        return session.get_one(Notification, notification_id)


def notify(pipeline: Pipeline, repoid: int, commitid: int) -> int:
    pending = pipeline.notify(repoid, commitid).webhook_pending
    assert pending is not None
    return pending


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",
        "100.64.0.1",
        "0.0.0.0",
        "::1",
        "fe80::1",
        "fd00::1",
        "::ffff:127.0.0.1",
        "224.0.0.1",
    ],
)
def test_non_public_addresses_are_refused_unless_allowed(address: str) -> None:
    with pytest.raises(WebhookRefused, match="COVWORKER_WEBHOOK_ALLOW_PRIVATE"):
        check_address(address, allow_private=False)
    check_address(address, allow_private=True)


def test_public_addresses_are_accepted() -> None:
    for address in ("8.8.8.8", "2606:4700:4700::1111"):
        check_address(address, allow_private=False)


def test_a_loopback_webhook_is_refused_by_default_for_good_and_nothing_is_sent(
    pipeline: Pipeline, receivers: list[Receiver]
) -> None:
    repoid, commitid = pipeline.settle()
    set_webhook(pipeline, receivers[0].url, allow_private=False)
    note = notify(pipeline, repoid, commitid)

    attempt = deliver_webhook(pipeline.services, note)

    assert attempt.attempted and attempt.retry_in_s is None  # no retry: it cannot help
    assert receivers[0].headers == []
    stored = row(pipeline, note)
    assert stored.webhook_failed_at is not None
    assert stored.webhook_error and "is not public" in stored.webhook_error


def test_a_redirect_is_not_followed(pipeline: Pipeline, receivers: list[Receiver]) -> None:
    first, elsewhere = receivers
    first.answers, first.location = [302], elsewhere.url
    repoid, commitid = pipeline.settle()
    set_webhook(pipeline, first.url)
    note = notify(pipeline, repoid, commitid)

    attempt = deliver_webhook(pipeline.services, note)

    assert not attempt.delivered and attempt.error
    assert "302 (redirects are not followed)" in attempt.error
    assert elsewhere.headers == []


def test_the_body_is_signed_with_the_repositorys_secret(
    pipeline: Pipeline, receivers: list[Receiver]
) -> None:
    repoid, commitid = pipeline.settle()
    set_webhook(pipeline, receivers[0].url)
    note = notify(pipeline, repoid, commitid)

    assert deliver_webhook(pipeline.services, note).delivered

    with pipeline.services.sessions() as session:
        secret = session.scalars(sa.select(Repository.webhook_secret)).one()
    assert secret and len(secret) >= 32
    raw = str(receivers[0].bodies[0]["raw"]).encode()
    assert receivers[0].headers[0][SIGNATURE_HEADER] == sign(secret, raw)
    assert receivers[0].headers[0][SIGNATURE_HEADER] != sign("another secret", raw)


def test_credentials_in_the_url_are_sent_as_basic_auth_and_never_logged_or_stored(
    pipeline: Pipeline, receivers: list[Receiver], caplog: pytest.LogCaptureFixture
) -> None:
    receivers[0].answers = [503]
    repoid, commitid = pipeline.settle()
    set_webhook(pipeline, receivers[0].url.replace("http://", "http://hook-user:s3cr3t-pw@"))
    note = notify(pipeline, repoid, commitid)

    with caplog.at_level(logging.INFO):
        failed = deliver_webhook(pipeline.services, note)
        later = utcnow() + timedelta(seconds=failed.retry_in_s or 0)
        delivered = deliver_webhook(pipeline.services, note, now=later)

    assert delivered.delivered
    expected = "Basic " + base64.b64encode(b"hook-user:s3cr3t-pw").decode()
    assert [h["Authorization"] for h in receivers[0].headers] == [expected, expected]
    assert failed.error and "s3cr3t-pw" not in failed.error and "***@" in failed.error
    assert "s3cr3t-pw" not in caplog.text
    assert "s3cr3t-pw" not in (row(pipeline, note).webhook_error or "")


def failed_once(pipeline: Pipeline, receiver: Receiver) -> tuple[int, int, int, Attempt]:
    """A settled commit whose notification's first delivery to ``receiver``
    failed (503): (repoid, commitid, the notification's id, that attempt)."""
    receiver.answers = [503]
    repoid, commitid = pipeline.settle()
    set_webhook(pipeline, receiver.url)
    note = notify(pipeline, repoid, commitid)
    return repoid, commitid, note, deliver_webhook(pipeline.services, note)


def test_an_older_pending_version_is_superseded_and_a_retry_goes_to_the_current_url(
    pipeline: Pipeline, receivers: list[Receiver]
) -> None:
    """v1 fails, the URL changes, v2 is delivered to the new URL; v1's retry
    is then never sent anywhere: the receiver ends with v2."""
    old, new = receivers
    repoid, commitid, v1, failed = failed_once(pipeline, old)
    assert failed.retry_in_s is not None

    set_webhook(pipeline, new.url)
    more = pipeline.upload(ci_matrix(1, files=1, lines=5))
    pipeline.process(more.upload_ids[0])
    pipeline.finish(repoid, commitid)
    v2 = notify(pipeline, repoid, commitid)
    assert deliver_webhook(pipeline.services, v2).delivered
    retry = deliver_webhook(
        pipeline.services, v1, now=utcnow() + timedelta(seconds=failed.retry_in_s)
    )

    assert not retry.attempted
    assert [b["report_version"] for b in new.bodies] == [2]
    assert len(old.headers) == 1 and old.bodies == []  # only v1's first, failed attempt
    superseded = row(pipeline, v1)
    assert superseded.webhook_failed_at is not None
    assert superseded.webhook_error == "superseded by a newer notification of the commit"


def test_a_retry_goes_to_the_url_current_when_it_is_sent(
    pipeline: Pipeline, receivers: list[Receiver]
) -> None:
    old, new = receivers
    _, _, note, failed = failed_once(pipeline, old)
    set_webhook(pipeline, new.url)

    later = utcnow() + timedelta(seconds=failed.retry_in_s or 0)
    assert deliver_webhook(pipeline.services, note, now=later).delivered
    assert [b["report_version"] for b in new.bodies] == [1] and old.bodies == []


def test_a_removed_webhook_is_not_retried(pipeline: Pipeline, receivers: list[Receiver]) -> None:
    _, _, note, failed = failed_once(pipeline, receivers[0])
    with pipeline.services.sessions.begin() as session:
        session.execute(sa.update(Repository).values(webhook_url=None))

    later = utcnow() + timedelta(seconds=failed.retry_in_s or 0)
    attempt = deliver_webhook(pipeline.services, note, now=later)
    assert attempt.attempted and attempt.retry_in_s is None
    assert row(pipeline, note).webhook_error == "the repository has no webhook any more"
    assert len(receivers[0].headers) == 1


def test_the_body_compares_with_the_pull_requests_base_learned_after_the_notification(
    pipeline: Pipeline, receivers: list[Receiver]
) -> None:
    base_sha, head_sha = "b" * 40, "c" * 40
    pipeline.settle(sha=base_sha)
    repoid, commitid = pipeline.settle(uploads=2, sha=head_sha)
    with pipeline.services.sessions.begin() as session:
        # The Codecov Action's upload: a branch and a pull request, no parent.
        session.execute(sa.update(Commit).where(Commit.sha == base_sha).values(branch="main"))
        session.execute(
            sa.update(Commit).where(Commit.id == commitid).values(branch="feature", pullid=7)
        )
    set_webhook(pipeline, receivers[0].url)
    note = notify(pipeline, repoid, commitid)
    assert row(pipeline, note).comparison["base_commit"] is None  # no pull known yet
    with pipeline.services.sessions.begin() as session:
        # What feedback's prepare stores once it has read the pull request.
        remember_pull(
            session, repoid, number=7, state="open", title="t", url="u",
            base_branch="main", base_sha=base_sha, head_branch="feature", head_sha=head_sha,
        )  # fmt: skip

    assert deliver_webhook(pipeline.services, note).delivered

    body = receivers[0].bodies[0]
    comparison = body["comparison"]
    assert isinstance(comparison, dict) and comparison["base_commit"] == base_sha
    with pipeline.services.sessions() as session:
        head = session.get_one(Commit, commitid)
        figures = commit_headline(session, head).to_json()
    assert figures["base_commit"] == base_sha
    assert body["coverage_display"] == figures["coverage_display"] is not None
    assert body["change_display"] == figures["change_display"] is not None
    assert body["rounding"] == {"precision": 2, "round": "down"}
    assert row(pipeline, note).comparison == comparison  # the row says what was sent
