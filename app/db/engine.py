"""Engines and sessions: PostgreSQL through psycopg 3, SQLite for the embedded default."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.orm import Session, sessionmaker

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

#: Connections of the api's asyncio engine, per server process: its
#: statements take a millisecond, so a few serve a burst of requests.
ASYNC_POOL_SIZE = 4
#: Seconds a SQLite writer waits for another before giving up.
SQLITE_BUSY_TIMEOUT_S = 30


def make_engine(url: str, **kwargs: Any) -> Engine:
    """An engine for ``url``; SQLite is set up for a multi-threaded worker."""
    if url.startswith("sqlite"):
        engine = sa.create_engine(
            url,
            connect_args={"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_S},
            **kwargs,
        )
        _serialise_sqlite_writers(engine)
        return engine
    kwargs.setdefault("pool_pre_ping", True)
    kwargs.setdefault("pool_size", 10)
    return sa.create_engine(url, **kwargs)


def _serialise_sqlite_writers(engine: Engine) -> None:
    """Start every SQLite transaction with BEGIN IMMEDIATE.

    SQLite has no SELECT ... FOR UPDATE; two deferred transactions that both
    read and then write deadlock on the lock upgrade. Taking the write lock
    at BEGIN serialises merges the way row locks do on PostgreSQL.
    """

    @event.listens_for(engine, "connect")
    def _connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # let us issue BEGIN ourselves
        dbapi_conn.execute("PRAGMA journal_mode=WAL")
        dbapi_conn.execute("PRAGMA foreign_keys=ON")

    @event.listens_for(engine, "begin")
    def _begin(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")


def binary_scalars(session: Session, statement: sa.Select[Any]) -> Iterator[Any]:
    """The first column of ``statement``'s rows, one row at a time.

    On PostgreSQL through psycopg the rows come in binary format: a ``bytea``
    arrives as its bytes, where the text format sends it as hex, twice its
    size, which libpq holds beside the bytes made of it (reading an 11 MiB
    payload raises the worker's resident memory by 67 MiB at the peak as
    text, 34 MiB in binary: ``benchmarks/payload_read_memory.py``). Elsewhere, as SQLAlchemy
    reads them. For statements with plain bound values (no expanding ``IN``);
    the caller reads every row (the stream holds the connection until then).
    """
    connection = session.connection()
    if connection.dialect.name == "postgresql" and connection.dialect.driver == "psycopg":
        compiled = statement.compile(dialect=connection.dialect)
        driver: Any = connection.connection.driver_connection
        with driver.cursor(binary=True) as cursor:
            for row in cursor.stream(str(compiled), compiled.params):
                yield row[0]
        return
    yield from session.scalars(statement)


def conflict_insert(session: Session, table: Any) -> Any:
    """The dialect's INSERT of ``table`` (PostgreSQL's or SQLite's), which takes
    ``ON CONFLICT`` clauses: a row that may exist already is written in one
    statement, without a savepoint to catch the unique key's error."""
    if session.get_bind().dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        return pg_insert(table)
    from sqlalchemy.dialects.sqlite import insert as sqlite_insert

    return sqlite_insert(table)


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)


def create_database_if_missing(url: str) -> bool:
    """Create the PostgreSQL database ``url`` names; True if it was created."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        return False
    admin = sa.create_engine(parsed.set(database="postgres"), isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            exists = conn.execute(
                sa.text("SELECT 1 FROM pg_database WHERE datname = :name"),
                {"name": parsed.database},
            ).scalar()
            if exists:
                return False
            quoted = conn.dialect.identifier_preparer.quote(str(parsed.database))
            conn.execute(sa.text(f"CREATE DATABASE {quoted}"))
            return True
    finally:
        admin.dispose()


def make_async_engine(engine: Engine) -> AsyncEngine | None:
    """An asyncio engine on the database of ``engine`` (PostgreSQL only, else
    None), for the statements the api runs on its event loop: no trip to a
    thread and back, no wait for the interpreter lock behind request work.
    Pinged on checkout like every engine here."""
    if engine.dialect.name != "postgresql":
        return None
    from sqlalchemy.ext.asyncio import create_async_engine

    url = engine.url.set(drivername="postgresql+psycopg")
    # Each of its statements is atomic alone: autocommit, no BEGIN/COMMIT.
    # A fixed pool (open_async_pool fills it at start-up): a burst of requests
    # waits a moment for a connection rather than opening new ones at once.
    return create_async_engine(
        url,
        pool_pre_ping=True,
        pool_size=ASYNC_POOL_SIZE,
        max_overflow=0,
        isolation_level="AUTOCOMMIT",
    )


async def open_async_pool(engine: AsyncEngine) -> None:
    """Open the pool's connections now, not under the first burst of requests."""
    async with contextlib.AsyncExitStack() as stack:
        for _ in range(ASYNC_POOL_SIZE):
            await stack.enter_async_context(engine.connect())
