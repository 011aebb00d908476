"""Migration 0014 (per-file totals and the comparison stored with a report
version), up and down on real PostgreSQL and on SQLite."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from alembic import command

from app.db.migrate import alembic_config, upgrade

NEW_COLUMNS = {("commit_reports", "file_totals"), ("commit_reports", "comparison")}


def present(url: str) -> set[tuple[str, str]]:
    engine = sa.create_engine(url)
    try:
        inspector = sa.inspect(engine)
        return {
            (table, column)
            for table, column in NEW_COLUMNS
            if column in {c["name"] for c in inspector.get_columns(table)}
        }
    finally:
        engine.dispose()


def test_0014_round_trips_on_postgresql(pg_url: str) -> None:
    _round_trip(pg_url)


def test_0014_round_trips_on_sqlite(tmp_path: Path) -> None:
    _round_trip(f"sqlite:///{tmp_path / 'm.db'}")


def _round_trip(url: str) -> None:
    upgrade(url, "0014")
    assert present(url) == NEW_COLUMNS
    command.downgrade(alembic_config(url), "0010")
    assert present(url) == set()
    upgrade(url, "0014")
    assert present(url) == NEW_COLUMNS
