"""Migration 0010 (stored and fetched codecov.yml, carried-forward flag reports),
up and down on real PostgreSQL and on SQLite."""

from __future__ import annotations

from pathlib import Path

from tests.support.migrations import assert_round_trip

NEW_COLUMNS = {
    ("repositories", "codecov_yaml"),
    ("repositories", "fetched_codecov_yaml"),
    ("commit_flag_reports", "carried_from"),
    ("commit_reports", "uploaded_report"),
}


def test_0010_round_trips_on_postgresql(pg_url: str) -> None:
    assert_round_trip(pg_url, "0010", "0006", NEW_COLUMNS)


def test_0010_round_trips_on_sqlite(tmp_path: Path) -> None:
    assert_round_trip(f"sqlite:///{tmp_path / 'm.db'}", "0010", "0006", NEW_COLUMNS)
