"""Migration 0019 (the bad records an upload's parser skipped), up and down
on real PostgreSQL and on SQLite."""

from __future__ import annotations

from pathlib import Path

from tests.support.migrations import assert_round_trip

COLUMNS = {("uploads", "skipped_records")}


def test_0019_round_trips_on_postgresql(pg_url: str) -> None:
    assert_round_trip(pg_url, "0019", "0018", COLUMNS)


def test_0019_round_trips_on_sqlite(tmp_path: Path) -> None:
    assert_round_trip(f"sqlite:///{tmp_path / 'm.db'}", "0019", "0018", COLUMNS)
