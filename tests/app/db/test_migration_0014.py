"""Migration 0014 (per-file totals and the comparison stored with a report
version), up and down on real PostgreSQL and on SQLite."""

from __future__ import annotations

from pathlib import Path

from tests.support.migrations import assert_round_trip

NEW_COLUMNS = {("commit_reports", "file_totals"), ("commit_reports", "comparison")}


def test_0014_round_trips_on_postgresql(pg_url: str) -> None:
    assert_round_trip(pg_url, "0014", "0010", NEW_COLUMNS)


def test_0014_round_trips_on_sqlite(tmp_path: Path) -> None:
    assert_round_trip(f"sqlite:///{tmp_path / 'm.db'}", "0014", "0010", NEW_COLUMNS)
