"""Real services, a real worker and report files for the CLI tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from dramatiq import Worker

from app.cli.main import main
from app.db.migrate import upgrade
from app.runtime.worker import build_app
from app.settings import Settings
from tests.support.services import fresh_database, redis_test_url, require_redis

SHA = "71c5d36" + "0" * 33


def lcov(hits: dict[str, dict[int, int]]) -> bytes:
    """An LCOV report: ``{path: {line: hits}}``."""
    out = []
    for path, lines in hits.items():
        out.append(f"SF:{path}")
        out += [f"DA:{ln},{n}" for ln, n in sorted(lines.items())]
        out.append("end_of_record")
    return ("\n".join(out) + "\n").encode()


def write(tmp_path: Path, reports: dict[str, bytes]) -> list[str]:
    paths = []
    for name, data in reports.items():
        (tmp_path / name).write_bytes(data)
        paths.append(str(tmp_path / name))
    return paths


#: 3 of 4 lines hit: 75 %.
GOOD = lcov({"src/a.py": {1: 1, 2: 1, 3: 1, 4: 0}})


def upload(*args: str) -> int:
    """``covworker upload`` of SHA to acme/web with ``args``; its exit status."""
    return main(["upload", "--create", "--repo", "acme/web", "--commit", SHA, *args])


@pytest.fixture
def database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A migrated SQLite file, the DATABASE_URL of this test; its URL."""
    url = f"sqlite:///{tmp_path / 'repos.db'}"
    upgrade(url)
    monkeypatch.setenv("DATABASE_URL", url)
    return url


@pytest.fixture
def services_env(monkeypatch: pytest.MonkeyPatch, namespace: str) -> Iterator[Settings]:
    """REDIS_URL, DATABASE_URL and a namespace of this test's own; migrated."""
    require_redis()
    with fresh_database(migrated=True) as url:
        monkeypatch.setenv("REDIS_URL", redis_test_url())
        monkeypatch.setenv("DATABASE_URL", url)
        monkeypatch.setenv("COVWORKER_NAMESPACE", namespace)
        assert main(["db", "upgrade"]) == 0
        yield Settings()


@pytest.fixture
def worker(services_env: Settings) -> Iterator[Worker]:
    """A Dramatiq worker on the real services, running while the test runs."""
    app = build_app(services_env, redis_client=redis.Redis.from_url(redis_test_url()))
    from app import actors  # noqa: F401  (declares the actors on app)

    running = Worker(app.broker, worker_threads=4, worker_timeout=50)
    running.start()
    yield running
    running.stop()
    app.close()
