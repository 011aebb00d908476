"""The parse budget in a real worker: 8 threads, real Redis and PostgreSQL."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import sqlalchemy as sa
from dramatiq import Worker

from app.cli.commands import submit
from app.db.models import Notification, Upload, UploadState
from app.pipeline import processor
from app.runtime.parse_budget import ParseBudget
from app.runtime.worker import CovworkerApp, build_app, join_queues
from app.settings import Settings
from tests.support.services import fresh_database, redis_test_url, require_redis
from tests.support.synthetic import ci_matrix

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


@pytest.fixture
def app(namespace: str) -> Iterator[CovworkerApp]:
    require_redis()
    with fresh_database(migrated=True) as url:
        settings = Settings(redis_url=redis_test_url(), database_url=url, namespace=namespace)
        covworker = build_app(settings, redis_client=redis.Redis.from_url(redis_test_url()))
        yield covworker
        covworker.close()


@pytest.mark.parametrize(
    "budget",
    [
        pytest.param(ParseBudget(1), id="bytes: every upload takes all of it"),
        pytest.param(ParseBudget(0, parses=1), id="one parse at once"),
    ],
)
def test_eight_worker_threads_parse_one_upload_at_a_time_within_a_budget_that_holds_one(
    app: CovworkerApp, budget: ParseBudget, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app.services.parse_budget = budget
    line = budget._bytes if budget.capacity else budget._parse
    lock = threading.Lock()
    counts = {"now": 0, "most": 0, "parsed": 0, "seen_waiting": 0}
    parse = processor.report_intermediate

    def counted(*args: Any, **kwargs: Any) -> Any:
        with lock:
            counts["now"] += 1
            counts["most"] = max(counts["most"], counts["now"])
            counts["seen_waiting"] = max(counts["seen_waiting"], len(line.waiting))
        try:
            return parse(*args, **kwargs)
        finally:
            with lock:
                counts["now"] -= 1
                counts["parsed"] += 1

    monkeypatch.setattr(processor, "report_intermediate", counted)
    files = []
    for name, data in ci_matrix(24, files=40, lines=50):
        path = tmp_path / name
        path.write_bytes(data)
        files.append(path)
    worker = Worker(app.broker, worker_threads=8, worker_timeout=50)
    worker.start()
    try:
        ids = submit(app, "acme/budget", "b" * 40, files, [])
        join_queues(app.broker, app.settings.queue_names, timeout_ms=90_000)
        worker.join()
    finally:
        worker.stop()

    assert counts["parsed"] == 24
    assert counts["most"] == 1, "never two parses at once"
    assert counts["seen_waiting"] > 0, "threads did wait for the budget"
    assert budget.in_use == 0
    with app.services.sessions() as session:
        states = set(session.scalars(sa.select(Upload.state).where(Upload.id.in_(ids))))
        notes = session.scalar(sa.select(sa.func.count()).select_from(Notification))
    assert states == {UploadState.MERGED} and notes == 1
