"""Engines and sessions: SQLite set up for a multi-threaded worker, PostgreSQL
pooled and pinged, the api's asyncio engine on PostgreSQL only."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

import pytest
import sqlalchemy as sa

from app.db.engine import (
    ASYNC_POOL_SIZE,
    create_database_if_missing,
    make_async_engine,
    make_engine,
    make_sessionmaker,
)
from app.db.migrate import upgrade
from app.db.models import Repository

PG = "postgresql+psycopg://covworker@db.example:5432/covworker"


def test_a_sqlite_engine_uses_wal_and_enforces_foreign_keys(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'x.db'}")
    try:
        with engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
    finally:
        engine.dispose()


def test_the_tests_sqlite_connections_do_not_fsync_each_commit(tmp_path: Path) -> None:
    """tests/conftest.py turns it off for the tests; the product keeps SQLite's FULL."""
    engine = make_engine(f"sqlite:///{tmp_path / 'x.db'}")
    try:
        with engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 0
        with sqlite3.connect(tmp_path / "x.db") as plain:
            assert plain.execute("PRAGMA synchronous").fetchone()[0] == 2
    finally:
        engine.dispose()


def test_a_sqlite_transaction_takes_the_write_lock_when_it_begins_not_when_it_writes(
    tmp_path: Path,
) -> None:
    """Two transactions that read then write would deadlock on the lock upgrade."""
    path = tmp_path / "x.db"
    engine = make_engine(f"sqlite:///{path}")
    other = sqlite3.connect(path, timeout=0, isolation_level=None)
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql("SELECT 1").scalar()  # a read only, so far
            with pytest.raises(sqlite3.OperationalError, match="locked"):
                other.execute("BEGIN IMMEDIATE")
        other.execute("BEGIN IMMEDIATE")  # free once it committed
        other.execute("ROLLBACK")
    finally:
        other.close()
        engine.dispose()


def test_a_sqlite_connection_can_be_used_from_another_thread(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'x.db'}")
    found: list[object] = []
    try:
        with engine.connect() as conn:
            worker = threading.Thread(target=lambda: found.append(conn.scalar(sa.text("SELECT 7"))))
            worker.start()
            worker.join(timeout=30)
        assert found == [7]
    finally:
        engine.dispose()


def test_a_postgresql_engine_pings_its_connections_and_pools_ten_unless_told() -> None:
    engine = make_engine(PG)
    smaller = make_engine(PG, pool_size=2, pool_pre_ping=False)
    try:
        assert engine.pool._pre_ping is True and engine.pool.size() == 10  # type: ignore[attr-defined]
        assert smaller.pool._pre_ping is False and smaller.pool.size() == 2  # type: ignore[attr-defined]
    finally:
        engine.dispose()
        smaller.dispose()


def test_sessions_keep_their_objects_readable_after_commit(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'x.db'}"
    upgrade(url)
    engine = make_engine(url)
    try:
        sessions = make_sessionmaker(engine)
        with sessions.begin() as session:
            repo = Repository(name="acme/web")
            session.add(repo)
        assert repo.name == "acme/web" and repo.id is not None  # no refresh after the session
    finally:
        engine.dispose()


def test_a_sqlite_database_is_never_created_but_its_directory_is(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "covworker.db"
    assert create_database_if_missing(f"sqlite:///{path}") is False
    assert path.parent.is_dir() and not path.exists()
    assert create_database_if_missing("sqlite:///:memory:") is False
    assert create_database_if_missing("sqlite://") is False


def test_the_asyncio_engine_is_postgresql_only_autocommit_with_a_fixed_pool(
    tmp_path: Path,
) -> None:
    sqlite = make_engine(f"sqlite:///{tmp_path / 'x.db'}")
    engine = make_engine("postgresql://covworker@db.example:5432/covworker")
    try:
        assert make_async_engine(sqlite) is None
        found = make_async_engine(engine)
        assert found is not None
        assert found.url.drivername == "postgresql+psycopg"
        assert found.url.database == "covworker" and found.url.host == "db.example"
        pool = found.sync_engine.pool
        assert pool.size() == ASYNC_POOL_SIZE and pool._max_overflow == 0  # type: ignore[attr-defined]
        asyncio.run(found.dispose())
    finally:
        sqlite.dispose()
        engine.dispose()


def test_the_asyncio_pool_opens_all_its_connections_at_once_in_autocommit(pg_url: str) -> None:
    from app.db.engine import open_async_pool

    engine = make_engine(pg_url)
    found = make_async_engine(engine)
    assert found is not None

    async def opened() -> tuple[int, bool]:
        await open_async_pool(found)
        checked_in = found.sync_engine.pool.checkedin()  # type: ignore[attr-defined]
        async with found.connect() as conn:
            raw = await conn.get_raw_connection()
            autocommit = bool(raw.driver_connection.autocommit)  # type: ignore[union-attr]
        await found.dispose()
        return int(checked_in), autocommit

    try:
        assert asyncio.run(opened()) == (ASYNC_POOL_SIZE, True)
    finally:
        engine.dispose()
