"""The bench's arithmetic: percentiles, concurrency from intervals, repeated runs."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.stampede.metrics import FIELDS, combine, max_running, percentile

pytestmark = pytest.mark.timeout(10)


def test_percentiles_are_nearest_rank_and_none_without_samples() -> None:
    samples = [float(x) for x in range(1, 101)]
    assert percentile(samples, 0.50) == 50.0
    assert percentile(samples, 0.99) == 99.0
    assert percentile([7.0], 0.99) == 7.0
    assert percentile([], 0.5) is None


def test_running_holders_are_counted_per_commit_from_their_intervals() -> None:
    holders = [
        {"k": "1:1", "t0": 0.0, "t1": 10.0},
        {"k": "1:1", "t0": 1.0, "t1": 2.0},
        {"k": "1:1", "t0": 1.5, "t1": 3.0},
        {"k": "1:1", "t0": 3.0, "t1": 4.0},  # starts as the previous one ends: not overlapping
        {"k": "2:2", "t0": 1.2, "t1": 1.8},  # another commit does not count
    ]
    assert max_running(holders) == 3
    assert max_running([]) == 0


def run(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {name: 1.0 for name in FIELDS}
    base.update(lost_uploads=0, double_merged=0, notifications_min=1, notifications_max=1)
    base.update(timed_out=False, rejected_p50_ms=None)
    base.update(overrides)
    return base


def test_repeated_runs_give_medians_but_report_losses_at_their_worst() -> None:
    runs = [
        run(worker_seconds=1.0, lost_uploads=0, notifications_min=1, rejected_p50_ms=3.0),
        run(worker_seconds=9.0, lost_uploads=2, notifications_min=0, notify_latency_s=None),
        run(worker_seconds=2.0, notifications_min=1, timed_out=True, rejected_p50_ms=5.0),
    ]
    combined = combine(runs)
    assert combined["worker_seconds"] == 2.0
    assert combined["lost_uploads"] == 2
    assert combined["notifications_min"] == 0
    assert combined["timed_out"] is True
    assert combined["rejected_p50_ms"] == 4.0, "the median of the runs that rejected any"
    assert combined["notify_latency_s"] is None, "a run that never notified is the worst"
    assert combined["runs"] == 3
    assert combined["per_run"]["worker_seconds"] == [1.0, 9.0, 2.0]
