"""``covworker demo``: a CI matrix's uploads of one commit, run embedded until settled."""

from __future__ import annotations

import json
import logging
import re

import pytest

from app.cli.demo import DEMO_REPORTS, sample_uploads
from app.cli.main import main

pytestmark = pytest.mark.timeout(120)


def test_the_sample_takes_the_bundled_reports_in_turn_one_per_job() -> None:
    bundled = sorted(p for p in DEMO_REPORTS.iterdir() if p.suffix in (".xml", ".info"))
    assert len(bundled) >= 2
    sample = sample_uploads(len(bundled) + 1)
    assert [name for name, _ in sample] == [
        *(f"job-{job}-{path.name}" for job, path in enumerate(bundled)),
        f"job-{len(bundled)}-{bundled[0].name}",
    ]
    assert [data for _, data in sample] == [p.read_bytes() for p in [*bundled, bundled[0]]]
    assert sample_uploads(0) == []


def test_demo_runs_a_stampede_embedded_and_reports_one_notification(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["demo", "--uploads", "24", "--threads", "6", "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["uploads_merged"] == 24 and figures["notifications"] == 1
    assert 1 <= figures["merge_passes"] <= 24
    assert figures["finisher_messages"] + figures["finisher_deferred"] >= 1


def test_the_demo_does_not_print_a_warning_per_deferred_message(
    capsys: pytest.CaptureFixture[str],
) -> None:
    worker_log = logging.getLogger("dramatiq.worker.WorkerThread")
    level = worker_log.level
    try:
        assert main(["demo", "--uploads", "40"]) == 0

        assert "was skipped" not in capsys.readouterr().err
        assert worker_log.getEffectiveLevel() == logging.ERROR
    finally:
        worker_log.setLevel(level)


def rows_of(out: str) -> dict[str, str]:
    """The demo table's rows, label to value."""
    return {
        " ".join(cells[0].split()): cells[1].strip()
        for line in out.splitlines()
        if len(cells := line.strip("│ ").split("│")) == 2
    }


def test_the_demo_table_shows_every_upload_merged_and_one_notification(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["demo", "--uploads", "5", "--threads", "2"]) == 0
    out = capsys.readouterr().out
    headline = out.splitlines()[0]
    assert headline.startswith("demo/matrix @ dddddddddddd: 5 of 5 uploads merged into one report")
    assert f"coverage {rows_of(out)['coverage, %']}% (" in headline
    rows = rows_of(out)
    assert rows["uploads"] == rows["uploads merged"] == "5"
    assert rows["notifications"] == "1"
    # Shown as every surface shows it: coverage.precision 2, rounded down.
    assert re.fullmatch(r"\d+\.\d\d", rows["coverage, %"]) and float(rows["coverage, %"]) > 0
    assert "finisher lock busy" not in rows  # the internals only with --counters


def test_the_demo_shows_the_finishers_counters_when_asked(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["demo", "--uploads", "3", "--threads", "2", "--counters"]) == 0
    rows = rows_of(capsys.readouterr().out)
    assert int(rows["finisher messages"]) >= 1 and rows["finisher lock busy"].isdigit()
