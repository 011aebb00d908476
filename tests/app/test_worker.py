"""The broker and actors on real Redis and PostgreSQL, with an in-process worker."""

from __future__ import annotations

from collections.abc import Iterator

import dramatiq
import pytest
import redis
import sqlalchemy as sa
from dramatiq import Worker

from app.cli.commands import submit
from app.db.migrate import upgrade
from app.db.models import Notification, Upload, UploadState
from app.settings import Settings
from app.worker import CovworkerApp, build_app
from benchmarks.synthetic import ci_matrix
from tests.support.services import fresh_database, redis_test_url, require_redis

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


@pytest.fixture
def app(namespace: str) -> Iterator[CovworkerApp]:
    require_redis()
    with fresh_database() as url:
        settings = Settings(
            redis_url=redis_test_url(), database_url=url, namespace=namespace, min_backoff_ms=10
        )
        upgrade(url)
        covworker = build_app(settings, redis_client=redis.Redis.from_url(redis_test_url()))
        yield covworker
        covworker.close()


def dead_letters(app: CovworkerApp) -> list[dramatiq.Message[object]]:
    client, broker = app.services.redis, app.broker
    raw = client.hvals(f"{broker.namespace}:{app.settings.queue_name}.XQ.msgs")
    return [dramatiq.Message.decode(m) for m in raw]


def test_malformed_messages_are_dead_lettered_at_once_and_the_rest_still_merges(
    app: CovworkerApp, tmp_path: object
) -> None:
    files = []
    for name, data in ci_matrix(5, files=2, lines=10):
        path = tmp_path / name  # type: ignore[operator]
        path.write_bytes(data)
        files.append(path)
    worker = Worker(app.broker, worker_threads=4, worker_timeout=50)
    worker.start()
    try:
        ids = submit(app, "acme/web", "c0ffee1" + "0" * 33, files, [])
        app.upload_processor.send("not-an-id")  # wrong type
        app.broker.enqueue(app.upload_finisher.message(1).copy(args=(1,)))  # missing argument
        app.upload_processor.send(987654)  # unknown upload
        app.notify.send(1, 987654)  # unknown commit
        app.broker.join(app.settings.queue_name, timeout=60_000)
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
