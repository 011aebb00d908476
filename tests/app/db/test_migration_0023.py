"""Migration 0023 (a branch's commits newest first), up and down on real
PostgreSQL and on SQLite."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from alembic import command

from app.db.migrate import alembic_config, upgrade

INDEX = "ix_commits_repository_branch_created"


def indexes(url: str) -> set[str]:
    engine = sa.create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        return {i["name"] for i in sa.inspect(engine).get_indexes("commits") if i["name"]}
    finally:
        engine.dispose()


def round_trip(url: str) -> None:
    upgrade(url, "0023")
    assert INDEX in indexes(url)
    command.downgrade(alembic_config(url), "0022")
    assert INDEX not in indexes(url)
    upgrade(url, "0023")
    assert INDEX in indexes(url)


def test_0023_round_trips_on_postgresql(pg_url: str) -> None:
    round_trip(pg_url)


def test_0023_round_trips_on_sqlite(tmp_path: Path) -> None:
    round_trip(f"sqlite:///{tmp_path / 'm.db'}")
