"""The bench's arithmetic: percentiles, concurrency from intervals, repeated runs."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.stampede.collect import CommitFacts, RunFacts
from benchmarks.stampede.metrics import (
    FIELDS,
    combine,
    figures,
    max_running,
    notification_parts,
    percentile,
)
from benchmarks.stampede.runner import ReferencePass, median_reference

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


def facts(
    deliveries: list[dict[str, Any]],
    rss_by_pid: dict[int, int],
    commits: list[CommitFacts] | None = None,
    notifies: list[dict[str, Any]] | None = None,
) -> RunFacts:
    return RunFacts(
        strategy="covworker",
        uploads=1,
        started=0.0,
        settled_at=1.0,
        timed_out=False,
        deliveries=deliveries,
        holders=[],
        notifies=notifies or [],
        redis_commands=0,
        worker_cpu_s=0.0,
        worker_delivery_cpu_s=0.0,
        worker_rss_by_pid=rss_by_pid,
        dead_lettered=0,
        commits=commits or [],
    )


def test_peak_rss_is_split_between_processes_that_merged_and_those_that_only_parsed() -> None:
    mib = 2**20
    ran = {"k": "1:1", "t0": 0.0, "t1": 1.0, "c": 0.5, "o": "ran", "p": 11}
    rejected = {**ran, "o": "rejected", "p": 12}  # a rejected delivery merges nothing
    split = figures(facts([ran, rejected], {11: 300 * mib, 12: 200 * mib}))
    assert split["worker_peak_rss_mib"] == 300
    assert split["worker_peak_rss_merging_mib"] == 300
    assert split["worker_peak_rss_parsing_only_mib"] == 200

    shared = figures(facts([ran, {**ran, "p": 12}], {11: 300 * mib, 12: 200 * mib}))
    assert shared["worker_peak_rss_merging_mib"] == 300
    assert shared["worker_peak_rss_parsing_only_mib"] is None
    combined = combine([split, shared])
    assert combined["worker_peak_rss_parsing_only_mib"] == 200, "the worst run that measured it"


def commit(commitid: int, last_processed: float, notified: float) -> CommitFacts:
    return CommitFacts(commitid, [1], [1], 1, [notified], last_processed, None, {})


def test_the_slowest_notification_is_split_into_parts_that_add_up_to_it() -> None:
    commits = [commit(7, 10.0, 11.7), commit(8, 10.0, 10.4)]
    notifies = [
        {"k": "1:8", "q": 10.1, "t0": 10.2, "t1": 10.5},
        {"k": "1:7", "q": 10.5, "t0": 10.6, "t1": 10.8},  # ran before it notified: not this one
        {"k": "1:7", "q": 11.0, "t0": 11.5, "t1": 11.9},
    ]
    parts = notification_parts(facts([], {1: 1}, commits, notifies))
    assert parts == pytest.approx(
        {"notify_sent_s": 1.0, "notify_queued_s": 0.5, "notify_ran_s": 0.2}
    )
    assert sum(parts.values()) == pytest.approx(1.7), "notified 1.7 s after the last processed"
    unrecorded = notification_parts(facts([], {1: 1}, commits, []))
    assert set(unrecorded.values()) == {None}


def test_the_reference_pass_of_several_rounds_is_their_median_with_each_kept() -> None:
    passes = [ReferencePass(0.07, 0.055, 100), ReferencePass(0.2, 0.09, 120)]
    passes.append(ReferencePass(0.06, 0.046, 110))
    reference = median_reference(passes)
    assert (reference.wall_s, reference.cpu_s) == (0.07, 0.055)
    assert reference.cpu_per_pass == (0.055, 0.09, 0.046)
    assert reference.merged_report_bytes == 120
