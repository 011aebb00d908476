"""Migration 0022 (whether the provider says a repository is private), up
and down on real PostgreSQL and on SQLite."""

from __future__ import annotations

from pathlib import Path

from tests.support.migrations import assert_round_trip

COLUMNS = {("repositories", "provider_private")}


def test_0022_round_trips_on_postgresql(pg_url: str) -> None:
    assert_round_trip(pg_url, "0022", "0019", COLUMNS)


def test_0022_round_trips_on_sqlite(tmp_path: Path) -> None:
    assert_round_trip(f"sqlite:///{tmp_path / 'm.db'}", "0022", "0019", COLUMNS)
