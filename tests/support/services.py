"""Real Redis and PostgreSQL for integration tests.

A test that needs a service it cannot reach is skipped on a developer's
machine and fails under ``CI=true``: CI must never go green by skipping.
"""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

import pytest
import redis
import sqlalchemy as sa
from sqlalchemy.engine import URL, make_url

DEFAULT_TEST_REDIS_URL = "redis://127.0.0.1:6379/0"
DEFAULT_TEST_PG_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"


def redis_test_url() -> str:
    return os.environ.get("COVWORKER_TEST_REDIS_URL", DEFAULT_TEST_REDIS_URL)


def pg_admin_url() -> str:
    return os.environ.get("COVWORKER_TEST_DATABASE_URL", DEFAULT_TEST_PG_URL)


def service_missing(what: str, why: object) -> None:
    message = f"{what} is not reachable: {why}"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{message} (CI=true: required services must run)")
    pytest.skip(message)


def require_redis() -> redis.Redis:
    client = redis.Redis.from_url(redis_test_url())
    try:
        client.ping()
    except redis.RedisError as exc:
        service_missing("Redis", exc)
    return client


def delete_namespace(url: str, namespace: str) -> int:
    """Delete every key of a test's namespace (``<namespace>*``); how many.
    Nothing to do if Redis is not reachable (the test did not use it)."""
    client = redis.Redis.from_url(url)
    deleted = 0
    try:
        batch: list[bytes] = []
        for key in client.scan_iter(match=f"{namespace}*", count=1000):
            batch.append(key)
            if len(batch) >= 500:
                deleted += int(client.unlink(*batch))
                batch.clear()
        if batch:
            deleted += int(client.unlink(*batch))
    except redis.RedisError:
        return deleted
    finally:
        client.close()
    return deleted


@contextmanager
def scratch_database(
    admin_url: str | URL, prefix: str, *, template: str | None = None
) -> Iterator[str]:
    """Create a uniquely named database (``prefix`` and a random suffix) on
    the server of ``admin_url`` (a URL of a database there one may connect to
    and create databases from), a copy of the database ``template`` if given;
    its URL; dropped on exit, open connections and all. Benchmarks use it too."""
    admin = make_url(admin_url)
    name = f"{prefix}{uuid.uuid4().hex[:12]}"
    copy = f' TEMPLATE "{template}"' if template else ""
    engine = sa.create_engine(admin, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            conn.execute(sa.text(f'CREATE DATABASE "{name}"{copy}'))
    except BaseException:
        engine.dispose()
        raise
    try:
        yield admin.set(database=name).render_as_string(hide_password=False)
    finally:
        with engine.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        engine.dispose()


@contextmanager
def bench_database(admin_url: str, prefix: str) -> Iterator[str]:
    """A benchmark's throw-away database: a file in a new temporary directory
    when ``admin_url`` is ``sqlite``, else :func:`scratch_database` on that
    server (``covworker_bench_`` and a random suffix)."""
    if admin_url == "sqlite":
        yield f"sqlite:///{tempfile.mkdtemp(prefix=prefix)}/bench.db"
        return
    with scratch_database(admin_url, "covworker_bench_") as url:
        yield url


#: Per admin URL, this process's database migrated to head, which
#: ``fresh_database(migrated=True)`` copies: ``CREATE DATABASE ... TEMPLATE``
#: takes about 0.2 s where Alembic takes 0.3 s in the process and ``covworker
#: db upgrade`` 2 s in a new one (most of it the interpreter starting).
_TEMPLATES: dict[str, tuple[str, ExitStack]] = {}


def _migrated_template(admin_url: str) -> str:
    found = _TEMPLATES.get(admin_url)
    if found is not None:
        return found[0]
    from app.db.migrate import upgrade

    owner = ExitStack()
    url = owner.enter_context(scratch_database(admin_url, "covworker_template_"))
    try:
        upgrade(url)  # its engine is disposed: a template must have no connection
    except BaseException:
        owner.close()
        raise
    name = make_url(url).database
    assert name is not None
    _TEMPLATES[admin_url] = (name, owner)
    return name


def drop_templates() -> None:
    """Drop the templates this process migrated (``tests/conftest.py``, at the end)."""
    while _TEMPLATES:
        _, (_, owner) = _TEMPLATES.popitem()
        owner.close()


@contextmanager
def fresh_database(*, migrated: bool = False) -> Iterator[str]:
    """A scratch database for a test (``pg_admin_url``'s server): empty, or
    (``migrated``) at the migrations' head, copied from a template migrated
    once per process."""
    with ExitStack() as scratch:
        try:
            admin = pg_admin_url()
            template = _migrated_template(admin) if migrated else None
            url = scratch.enter_context(scratch_database(admin, "covworker_t_", template=template))
        except sa.exc.OperationalError as exc:
            service_missing("PostgreSQL", exc)
        if migrated:
            _new_instance_id(url)
        yield url


def _new_instance_id(url: str) -> None:
    """Give a copy of the template its own database id, as migrating it would
    have (migration 0004): Redis keys carry it, so copies must not share it."""
    engine = sa.create_engine(url)
    try:
        with engine.begin() as conn:
            conn.execute(
                sa.text("UPDATE instance SET id = :id, created_at = now()"),
                {"id": uuid.uuid4().hex},
            )
    finally:
        engine.dispose()
