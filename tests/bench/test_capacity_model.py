"""The capacity model: a component's cores are its idle cost plus its cost
per upload times the rate, so a run predicts another of the same mix."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.capacity_model import Model, check

pytestmark = pytest.mark.timeout(10)


def run_at(uploads_per_s: float, window_s: float = 100.0) -> dict[str, Any]:
    """A run whose worker costs 0.05 cores idle and 80 ms an upload, Redis 100
    commands a second idle and 20 an upload: what sustained_load.py reports."""
    uploads = int(uploads_per_s * window_s)
    return {
        "uploads_answered": uploads,
        "window_s": window_s,
        "idle_cores": {"worker": 0.05, "redis": 0.01},
        "cores": {"worker": 0.05 + uploads_per_s * 0.08, "redis": 0.01 + uploads_per_s * 0.002},
        "idle_rates": {"redis_commands_per_s": 100.0, "postgres_transactions_per_s": 1.0},
        "per_upload": {
            "redis_commands": (100.0 * window_s + 20 * uploads) / uploads,
            "postgres_transactions": (1.0 * window_s + 10 * uploads) / uploads,
        },
        "mix": {"mean_raw_kb": 300.0},
    }


def test_a_run_predicts_another_rates_cores_and_counts_from_its_idle_and_per_upload_costs() -> None:
    model = Model.of(run_at(5.0))
    worker = next(c for c in model.components if c.name == "worker")
    assert worker.idle_cores == 0.05 and worker.cpu_s_per_upload == pytest.approx(0.08)
    rows = check(model, run_at(2.0))
    assert {r["what"] for r in rows} >= {"worker cores", "Redis commands/s"}
    assert all(abs(r["error"]) < 1e-6 for r in rows), rows


def test_a_machine_saturates_when_the_idle_and_per_upload_costs_fill_its_cores() -> None:
    rate, largest = Model.of(run_at(5.0)).saturation(2.0)
    assert rate == pytest.approx((2.0 - 0.06) / 0.082) and largest == "worker"
    plan = Model.of(run_at(5.0)).plan(1_000_000, peak=3.0)
    assert plan["peak_uploads_per_s"] == pytest.approx(34.72, abs=0.01)
    assert plan["worker_processes"] == 5  # (0.05 + 34.72 x 0.08) / 0.7 cores each, rounded up
