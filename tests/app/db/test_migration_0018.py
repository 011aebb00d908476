"""Migration 0018 (who named the default branch), up and down on real
PostgreSQL and on SQLite."""

from __future__ import annotations

from pathlib import Path

from tests.support.migrations import assert_round_trip

COLUMNS = {("repositories", "default_branch_source")}


def test_0018_round_trips_on_postgresql(pg_url: str) -> None:
    assert_round_trip(pg_url, "0018", "0017", COLUMNS)


def test_0018_round_trips_on_sqlite(tmp_path: Path) -> None:
    assert_round_trip(f"sqlite:///{tmp_path / 'm.db'}", "0018", "0017", COLUMNS)
