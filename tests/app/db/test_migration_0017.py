"""Migration 0017 (each file's branch lines beside its stored windows), up
and down on real PostgreSQL and on SQLite."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from alembic import command

from app.db.migrate import alembic_config, upgrade


def has_file_branches(url: str) -> bool:
    engine = sa.create_engine(url)
    try:
        columns = sa.inspect(engine).get_columns("report_file_lines")
        return "file_branches" in {c["name"] for c in columns}
    finally:
        engine.dispose()


def test_0017_round_trips_on_postgresql(pg_url: str) -> None:
    _round_trip(pg_url)


def test_0017_round_trips_on_sqlite(tmp_path: Path) -> None:
    _round_trip(f"sqlite:///{tmp_path / 'm.db'}")


def _round_trip(url: str) -> None:
    upgrade(url, "0017")
    assert has_file_branches(url)
    command.downgrade(alembic_config(url), "0016")
    assert not has_file_branches(url)
    upgrade(url, "0017")
    assert has_file_branches(url)
