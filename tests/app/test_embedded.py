"""The embedded run restarted on its SQLite file: a new fakeredis is no loss."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from app.cli.commands import submit
from app.embedded import embedded
from app.queries import commit_report

SHA = "e" * 40


def test_a_restart_on_the_same_file_says_its_redis_is_new_at_info_and_warns_of_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    database = tmp_path / "covworker.db"
    report = tmp_path / "a.info"
    report.write_text("SF:a.py\nDA:1,1\nDA:2,0\nend_of_record\n")
    with embedded(database_path=database) as first:
        submit(first.app, "acme/web", SHA, [report], [])
        first.wait_settled()
    caplog.clear()
    with caplog.at_level(logging.INFO), embedded(database_path=database) as second:
        second.wait_settled()
        merged = commit_report(second.app.services, "acme/web", SHA)
    assert merged is not None and merged["totals"]["lines"] == 2
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text
    assert "Redis is an in-memory fakeredis, new on every start" in caplog.text
