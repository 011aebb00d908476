"""The broker and actors on real Redis and PostgreSQL, with an in-process worker."""

from __future__ import annotations

import http.server
import json
from collections.abc import Iterator
from pathlib import Path

import dramatiq
import pytest
import redis
import sqlalchemy as sa
from dramatiq import Worker

from app.cli.commands import submit
from app.cli.main import main
from app.db.models import Notification, Repository, Upload, UploadState
from app.runtime.worker import CovworkerApp, build_app, join_queues
from app.settings import Settings
from tests.support.loopback import serving
from tests.support.private_services import wait_until
from tests.support.services import fresh_database, redis_test_url, require_redis
from tests.support.synthetic import ci_matrix

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


@pytest.fixture
def app(namespace: str) -> Iterator[CovworkerApp]:
    require_redis()
    with fresh_database(migrated=True) as url:
        settings = Settings(
            redis_url=redis_test_url(), database_url=url, namespace=namespace, min_backoff_ms=10
        )
        covworker = build_app(settings, redis_client=redis.Redis.from_url(redis_test_url()))
        from app import actors  # noqa: F401  (declares the actors on covworker)

        yield covworker
        covworker.close()


def dead_letters(app: CovworkerApp) -> list[dramatiq.Message[object]]:
    client, broker = app.services.redis, app.broker
    raw = [
        m
        for queue in app.settings.queue_names  # notify's are on the finisher queue
        for m in client.hvals(f"{broker.namespace}:{queue}.XQ.msgs")
    ]
    return [dramatiq.Message.decode(m) for m in raw]


def test_malformed_messages_are_dead_lettered_at_once_and_the_rest_still_merges(
    app: CovworkerApp, tmp_path: object
) -> None:
    files = []
    for name, data in ci_matrix(5, files=2, lines=10):
        path = tmp_path / name  # type: ignore[operator]
        path.write_bytes(data)
        files.append(path)
    from app import actors  # declared on the fixture's app

    worker = Worker(app.broker, worker_threads=4, worker_timeout=50)
    worker.start()
    try:
        ids = submit(app, "acme/web", "c0ffee1" + "0" * 33, files, [])
        actors.upload_processor.send("not-an-id")  # wrong type
        app.broker.enqueue(actors.upload_finisher.message(1).copy(args=(1,)))  # missing argument
        actors.upload_processor.send(987654)  # unknown upload
        actors.notify.send(1, 987654)  # unknown commit
        join_queues(app.broker, app.settings.queue_names, timeout_ms=60_000)
        worker.join()
    finally:
        worker.stop()

    dead = dead_letters(app)
    assert sorted(str(m.args) for m in dead) == sorted(
        ["('not-an-id',)", "(1,)", "(987654,)", "(1, 987654)"]
    ), dead
    assert all(m.options.get("retries", 0) == 0 for m in dead)  # dead at once, no retry storm
    with app.services.sessions() as session:
        states = set(session.scalars(sa.select(Upload.state).where(Upload.id.in_(ids))))
        notes = session.scalar(sa.select(sa.func.count()).select_from(Notification))
    assert states == {UploadState.MERGED} and notes == 1


class FlakyHook(http.server.BaseHTTPRequestHandler):
    """Answers 503 to the first ``failures`` POSTs, then 200; counts what it accepted."""

    failures = 0
    answered: list[int] = []
    accepted: list[dict[str, object]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        code = 503 if len(FlakyHook.answered) < FlakyHook.failures else 200
        FlakyHook.answered.append(code)
        if code == 200:
            FlakyHook.accepted.append(body)
        self.send_response(code)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def flaky_hook() -> Iterator[str]:
    FlakyHook.answered, FlakyHook.accepted = [], []
    with serving(FlakyHook) as base:
        yield f"{base}/hook"


def test_a_webhook_down_longer_than_the_retry_budget_is_delivered_once_when_it_recovers(
    namespace: str,
    flaky_hook: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    require_redis()
    # Two attempts are all a failing message gets (max_retries 1); the hook fails six.
    env = {
        "REDIS_URL": redis_test_url(),
        "COVWORKER_NAMESPACE": namespace,
        "COVWORKER_MAX_RETRIES": "1",
        "COVWORKER_MIN_BACKOFF_MS": "10",
        "COVWORKER_MAX_BACKOFF_MS": "50",
        "COVWORKER_WEBHOOK_MIN_BACKOFF_S": "0.1",
        "COVWORKER_WEBHOOK_MAX_BACKOFF_S": "0.4",
        "COVWORKER_WEBHOOK_ALLOW_PRIVATE": "true",  # the receiver listens on loopback
    }
    FlakyHook.failures = 6
    with fresh_database(migrated=True) as url:
        for name, value in {**env, "DATABASE_URL": url}.items():
            monkeypatch.setenv(name, value)
        covworker = build_app(Settings())
        from app import actors  # noqa: F401  (declares the actors on covworker)

        files = []
        for name, data in ci_matrix(3, files=1, lines=5):
            (tmp_path / name).write_bytes(data)
            files.append(tmp_path / name)
        submit(covworker, "acme/web", "c0ffee1" + "0" * 33, files, [])
        with covworker.services.sessions.begin() as session:
            session.execute(sa.update(Repository).values(webhook_url=flaky_hook))
        worker = Worker(covworker.broker, worker_threads=4, worker_timeout=50)
        worker.start()
        try:
            wait_until(
                "the webhook delivered",
                lambda: delivered(covworker),
                timeout_s=60,
            )
            join_queues(covworker.broker, covworker.settings.queue_names, timeout_ms=60_000)
            worker.join()
        finally:
            worker.stop()
            covworker.close()
        capsys.readouterr()
        assert main(["status", "--repo", "acme/web", "--commit", "c0ffee1"]) == 0
        status = capsys.readouterr().out

    assert FlakyHook.answered == [503] * 6 + [200]
    assert len(FlakyHook.accepted) == 1 and FlakyHook.accepted[0]["repository"] == "acme/web"
    assert "delivered after 7 attempt(s)" in status


def delivered(covworker: CovworkerApp) -> bool:
    with covworker.services.sessions() as session:
        return bool(
            session.scalar(
                sa.select(sa.func.count())
                .select_from(Notification)
                .where(Notification.webhook_delivered_at.is_not(None))
            )
        )
