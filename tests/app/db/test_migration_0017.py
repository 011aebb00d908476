"""Migration 0017 (who named the default branch), up and down on real
PostgreSQL and on SQLite."""

from __future__ import annotations

from pathlib import Path

from tests.support.migrations import assert_round_trip

COLUMNS = {("repositories", "default_branch_source")}


def test_0017_round_trips_on_postgresql(pg_url: str) -> None:
    assert_round_trip(pg_url, "0017", "0016", COLUMNS)


def test_0017_round_trips_on_sqlite(tmp_path: Path) -> None:
    assert_round_trip(f"sqlite:///{tmp_path / 'm.db'}", "0017", "0016", COLUMNS)
