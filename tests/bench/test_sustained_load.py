"""The sustained-load benchmark end to end at a tiny size, so it cannot rot.

Real ``covworker serve`` and ``dramatiq app.actors`` processes, Locust
speaking codecov-cli's protocol, a private Redis and a database of its own:
ten seconds of small CI matrices. It checks that every commit sent was
merged and notified once and that every figure is there, not how fast
anything is (BENCHMARKS.md, "Sustained load", is the full run).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import ROOT
from tests.support.services import pg_admin_url, require_redis

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(240)]


def test_ten_seconds_of_ci_matrices_are_all_merged_and_notified_once(tmp_path: Path) -> None:
    require_redis()  # the private Redis needs redis-server; PostgreSQL is the shared one
    out = tmp_path / "load.json"
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "sustained_load.py"), "--small",
         "--rate", "0.5", "--duration", "10", "--workers", "1", "--threads", "4",
         "--serve", "1", "--drain", "120", "--admin-database-url", pg_admin_url(),
         "--json", str(out)],
        capture_output=True, text=True, timeout=220, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["locust_rc"] == 0, result["locust_tail"]
    assert result["commits"] >= 3 and result["uploads_answered"] >= result["commits"]
    assert (result["lost"], result["doubled"], result["failed"]) == (0, 0, 0)
    assert result["notify_p95_s"] is not None and result["drain_s"] < 120
    cost = result["per_upload"]
    assert cost["worker_cpu_ms"] > 0 and cost["serve_cpu_ms"] > 0
    assert cost["redis_commands"] > 0 and cost["postgres_transactions"] > 0
    assert result["parse_floor_uploads_per_core_s"] > 0 and result["queue_depth"]
