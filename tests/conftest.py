from __future__ import annotations

import functools
import inspect
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.support.services import (
    delete_namespace,
    drop_templates,
    fresh_database,
    redis_test_url,
    require_redis,
)

TESTS = Path(__file__).resolve().parent


@pytest.fixture(autouse=True, scope="session")
def _sqlite_files_from_a_migrated_template() -> Iterator[None]:
    """New SQLite files start as a copy of one migrated per process
    (``tests/support/sqlite_template.py``): the same schema, 0.14 s less each."""
    from alembic import command

    from tests.support.sqlite_template import SqliteTemplate

    real = command.upgrade
    command.upgrade = SqliteTemplate(real).upgrade  # type: ignore[assignment]
    yield
    command.upgrade = real


@pytest.fixture(autouse=True, scope="session")
def _sqlite_commits_not_synced_to_disk() -> Iterator[None]:
    """Every SQLite connection of the tests runs with ``PRAGMA synchronous=OFF``:
    a commit is not fsynced (2 ms each here, thousands of commits in
    ``pytest -m unit``). Only losing power could lose one: a process that
    dies, as some tests make one, still leaves every commit in the file. The
    product keeps SQLite's default, FULL (``app/db/engine.py``)."""
    import sqlite3

    import sqlalchemy as sa

    def not_synced(dbapi_conn: object, _record: object) -> None:
        if isinstance(dbapi_conn, sqlite3.Connection):
            dbapi_conn.execute("PRAGMA synchronous=OFF")

    sa.event.listen(sa.engine.Engine, "connect", not_synced)
    yield
    sa.event.remove(sa.engine.Engine, "connect", not_synced)


@pytest.fixture(autouse=True, scope="session")
def _postgres_templates_dropped() -> Iterator[None]:
    """Migrated PostgreSQL databases are copies of a template each process
    migrates once (``tests/support/services.py``); dropped at the end. (Every
    test uses this fixture: its source must name no server, or the tiers
    below would count every test as needing one.)"""
    yield
    drop_templates()


@pytest.fixture
def namespace() -> Iterator[str]:
    """A key namespace of this test's own, so tests never see each other's
    keys; every key under it is deleted afterwards (Dramatiq's queues, the
    gate's and the pipeline's keys all start with it)."""
    name = f"cwt-{uuid.uuid4().hex[:10]}"
    yield name
    delete_namespace(redis_test_url(), name)


@pytest.fixture
def redis_url() -> str:
    require_redis()
    return redis_test_url()


@pytest.fixture
def redis_client(redis_url: str) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(redis_url)
    yield client
    client.close()


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A fresh, empty PostgreSQL database for this test."""
    with fresh_database() as url:
        yield url


# -- tiers: ``pytest -m unit`` runs every test that needs no server ---------

#: Directories whose tests start servers, worker processes or containers.
SERVER_DIRS = frozenset({"e2e", "faults", "scale", "bench", "browser", "deploy"})
#: Names whose use in a test or in a fixture it depends on means a real server
#: (Redis, PostgreSQL, RabbitMQ, a private one, SeaweedFS, dramatiq or covworker processes).
SERVER_NAMES = (
    "require_redis",
    "require_postgres",
    "redis_test_url",
    "pg_admin_url",
    "fresh_database",
    "service_env",
    "private_services",
    "dramatiq_workers",
    "covworker(",
    "rabbitmq",
    "redis_cluster",
    "real_services",
    '"redis_url"',
    '"pg_url"',
    "prism",
    "SeaweedS3(",
)
SERVER_MARKERS = ("integration", "e2e", "slow")


@functools.cache
def _source(obj: object) -> str:
    """The source of ``obj``, read once: a fixture is used by many tests, and
    ``inspect.getsource`` takes 2.5 s over a collection otherwise."""
    try:
        return inspect.getsource(obj)  # type: ignore[arg-type]
    except (OSError, TypeError):
        return ""


def needs_a_server(item: pytest.Item) -> bool:
    """True if ``item`` (or a fixture it uses, however deep) reaches a server."""
    path = Path(str(item.fspath)).relative_to(TESTS)
    if path.parts[0] in SERVER_DIRS:
        return True
    if any(item.get_closest_marker(name) for name in SERVER_MARKERS):
        return True
    sources = [_source(getattr(item, "function", None))]
    info = getattr(item, "_fixtureinfo", None)
    for defs in info.name2fixturedefs.values() if info else ():
        sources.extend(_source(d.func) for d in defs)
    return any(name in text for text in sources for name in SERVER_NAMES)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Under ``-m unit`` the directories of SERVER_DIRS are not collected at all:
    none of their tests is in the tier (``needs_a_server``), and importing
    them cost each worker 0.5 s before the first test ran."""
    if config.option.markexpr != "unit" or collection_path.parent != TESTS:
        return None
    return True if collection_path.name in SERVER_DIRS else None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark ``unit`` every test that needs no server (README: "Tests")."""
    for item in items:
        if not needs_a_server(item):
            item.add_marker(pytest.mark.unit)
