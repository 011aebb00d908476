"""Migration 0015 (each file's lines stored in windows with its report
version), up and down on real PostgreSQL and on SQLite."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from alembic import command

from app.db.migrate import alembic_config, upgrade


def present(url: str) -> tuple[bool, bool]:
    """(the table exists, ``commit_reports.lines_version`` exists)."""
    engine = sa.create_engine(url)
    try:
        inspector = sa.inspect(engine)
        columns = {c["name"] for c in inspector.get_columns("commit_reports")}
        return inspector.has_table("report_file_lines"), "lines_version" in columns
    finally:
        engine.dispose()


def test_0015_round_trips_on_postgresql(pg_url: str) -> None:
    _round_trip(pg_url)


def test_0015_round_trips_on_sqlite(tmp_path: Path) -> None:
    _round_trip(f"sqlite:///{tmp_path / 'm.db'}")


def _round_trip(url: str) -> None:
    upgrade(url, "0015")
    assert present(url) == (True, True)
    command.downgrade(alembic_config(url), "0014")
    assert present(url) == (False, False)
    upgrade(url, "0015")
    assert present(url) == (True, True)
