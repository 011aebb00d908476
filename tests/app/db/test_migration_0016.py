"""Migration 0016 (the pull requests read from the provider), up and down on
real PostgreSQL and on SQLite."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from alembic import command

from app.db.migrate import alembic_config, upgrade


def has_pulls(url: str) -> bool:
    engine = sa.create_engine(url)
    try:
        return sa.inspect(engine).has_table("pulls")
    finally:
        engine.dispose()


def test_0016_round_trips_on_postgresql(pg_url: str) -> None:
    _round_trip(pg_url)


def test_0016_round_trips_on_sqlite(tmp_path: Path) -> None:
    _round_trip(f"sqlite:///{tmp_path / 'm.db'}")


def _round_trip(url: str) -> None:
    upgrade(url, "0016")
    assert has_pulls(url)
    command.downgrade(alembic_config(url), "0015")
    assert not has_pulls(url)
    upgrade(url, "0016")
    assert has_pulls(url)
