"""The figures of one run, computed from its facts (nothing estimated).

- ``merge_passes``, ``lock_acquisitions``: the per-commit counters the
  finishers keep in Redis (``ProcessingState.count``), summed over commits.
- ``deliveries``: finisher deliveries seen by the timing middleware, every
  deferral, coalesced skip, retry and lock timeout included.
- ``worker_cpu_seconds`` (the primary cost figure): CPU time of every
  worker process, all threads, from the start of its first delivery to the
  end of its last one, summed over processes (processors, finishers, notify, polling
  and Dramatiq's own work included; ``burst`` parses in the driver).
  ``worker_cpu_in_deliveries_seconds`` is the part the deliveries' threads
  spent inside them (every actor, gate decisions included);
  ``worker_cpu_outside_deliveries_seconds`` the rest: consumers polling,
  heartbeats, Dramatiq between deliveries.
- ``worker_seconds`` (secondary): the sum of the finisher deliveries' wall
  times (a worker thread is busy for that long: gate decision, lock waits,
  merge, requeue). On 16 threads sharing 2 cores it mostly measures the
  wait for the GIL; ``finisher_cpu_seconds`` is the same sum in thread CPU.
- ``notify_latency_s``: per commit, first notification minus the moment its
  last upload was processed (``burst``: the moment the finisher messages were
  sent, all uploads being processed by then); the worst commit.
- ``settle_s``: from the scenario's first message to the queue being empty,
  delayed and in-flight messages included.
- ``lost_uploads``: uploads not in the commit report's merged list at the
  end; ``double_merged``: ids in that list more than once.
- ``notifications``: notification rows per commit (mean; min and max beside).
- ``redis_commands_per_upload``: commands the run's clients sent (workers and
  driver, counted by the connections), over uploads.
- ``rejected_p50_ms``/``rejected_p99_ms``: wall time of deliveries turned
  away (gate deferral or coalescing, over-limit or lock-timeout ``Retry``,
  ``RateLimitExceeded``); None when there were none.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from typing import Any

from benchmarks.stampede.collect import CommitFacts, RunFacts

#: The fields every strategy's JSON object has (the issue's list).
FIELDS = (
    "merge_passes",
    "lock_acquisitions",
    "deliveries",
    "worker_cpu_seconds",
    "worker_seconds",
    "notify_latency_s",
    "settle_s",
    "lost_uploads",
    "double_merged",
    "notifications",
    "redis_commands_per_upload",
    "rejected_p50_ms",
    "rejected_p99_ms",
)


def percentile(samples: list[float], p: float) -> float | None:
    """Nearest-rank percentile; None without samples."""
    if not samples:
        return None
    ordered = sorted(samples)
    rank = max(1, min(len(ordered), math.ceil(p * len(ordered))))
    return ordered[rank - 1]


def max_running(holders: list[dict[str, Any]]) -> int:
    """Most admitted finishers of one commit running at the same time."""
    per_commit: dict[str, list[tuple[float, int]]] = defaultdict(list)
    for h in holders:
        per_commit[h["k"]] += [(h["t0"], 1), (h["t1"], -1)]
    most = 0
    for edges in per_commit.values():
        running = 0
        for _, step in sorted(edges, key=lambda e: (e[0], e[1])):  # ends before starts
            running += step
            most = max(most, running)
    return most


def notify_latency(commit: CommitFacts) -> float | None:
    """Seconds from the commit's last upload being processed (or, in ``burst``,
    its finishers being sent) to its first notification."""
    ready = max(t for t in (commit.last_processed_at, commit.released_at) if t is not None)
    return commit.notified_at[0] - ready if commit.notified_at else None


def notified_after_last_processed(commit: CommitFacts) -> float | None:
    """Seconds from the commit's last upload being processed to its first notification."""
    if not commit.notified_at or commit.last_processed_at is None:
        return None
    return commit.notified_at[0] - commit.last_processed_at


def figures(facts: RunFacts) -> dict[str, Any]:
    deliveries = facts.deliveries
    rejected_ms = [(d["t1"] - d["t0"]) * 1000 for d in deliveries if d["o"] == "rejected"]
    lost = sum(len(set(c.upload_ids) - set(c.merged_ids)) for c in facts.commits)
    double = sum(len(c.merged_ids) - len(set(c.merged_ids)) for c in facts.commits)
    notes = [len(c.notified_at) for c in facts.commits]
    latencies = [x for c in facts.commits if (x := notify_latency(c)) is not None]
    after_processed = [
        x for c in facts.commits if (x := notified_after_last_processed(c)) is not None
    ]
    commits = max(1, len(facts.commits))
    out: dict[str, Any] = {
        "merge_passes": sum(c.stats["merge_passes"] for c in facts.commits),
        "lock_acquisitions": sum(c.stats["lock_acquisitions"] for c in facts.commits),
        "deliveries": len(deliveries),
        "worker_cpu_seconds": facts.worker_cpu_s,
        "worker_seconds": sum(d["t1"] - d["t0"] for d in deliveries),
        "notify_latency_s": max(latencies) if latencies else None,
        "settle_s": facts.settled_at - facts.started,
        "lost_uploads": lost,
        "double_merged": double,
        "notifications": sum(notes) / commits,
        "redis_commands_per_upload": facts.redis_commands / max(1, facts.uploads),
        "rejected_p50_ms": percentile(rejected_ms, 0.50),
        "rejected_p99_ms": percentile(rejected_ms, 0.99),
        # Detail behind the headline figures.
        "finisher_cpu_seconds": sum(d.get("c", 0.0) for d in deliveries),
        "worker_cpu_in_deliveries_seconds": facts.worker_delivery_cpu_s,
        "worker_cpu_outside_deliveries_seconds": facts.worker_cpu_s - facts.worker_delivery_cpu_s,
        "merge_passes_max_per_commit": max(
            (c.stats["merge_passes"] for c in facts.commits), default=0
        ),
        "lock_acquisitions_max_per_commit": max(
            (c.stats["lock_acquisitions"] for c in facts.commits), default=0
        ),
        "notify_after_last_processed_s": max(after_processed, default=None),
        "notify_latency_p50_s": statistics.median(latencies) if latencies else None,
        "notify_after_last_processed_p95_s": percentile(after_processed, 0.95),
        "merge_passes_per_commit": sum(c.stats["merge_passes"] for c in facts.commits) / commits,
        "worker_peak_rss_mib": facts.worker_peak_rss / 2**20,
        **_rss_by_role(facts),
        **notification_parts(facts),
        "notifications_min": min(notes, default=0),
        "notifications_max": max(notes, default=0),
        "commits_notified": sum(1 for n in notes if n),
        "deliveries_rejected": len(rejected_ms),
        "deliveries_errored": sum(1 for d in deliveries if d["o"] == "error"),
        "dead_lettered": facts.dead_lettered,
        "report_versions": sum(c.report_version for c in facts.commits),
        "uploads_merged": sum(len(set(c.merged_ids)) for c in facts.commits),
        "max_running_per_commit": max_running(facts.holders),
        "uploads": facts.uploads,
        "commits": len(facts.commits),
        "timed_out": facts.timed_out,
    }
    return out


def notification_parts(facts: RunFacts) -> dict[str, float | None]:
    """The slowest commit's ``notify_after_last_processed_s`` in three parts
    that add up to it: until its notify message was sent (the merge passes),
    waiting in the queue, and the notify delivery until it notified. All
    three are None when no notify delivery wrote it: the finisher that
    settles a commit notifies in its own delivery, and sends ``notify`` only
    if that fails."""
    parts: dict[str, float | None] = dict.fromkeys(
        ("notify_sent_s", "notify_queued_s", "notify_ran_s")
    )
    timed = [
        (after, c) for c in facts.commits if (after := notified_after_last_processed(c)) is not None
    ]
    if not timed:
        return parts
    _, commit = max(timed, key=lambda pair: pair[0])
    assert commit.last_processed_at is not None
    notified = commit.notified_at[0]
    ran = [
        n
        for n in facts.notifies
        if n["k"].endswith(f":{commit.commitid}") and n["t0"] <= notified <= n["t1"]
    ]
    if ran:
        parts.update(
            notify_sent_s=ran[0]["q"] - commit.last_processed_at,
            notify_queued_s=ran[0]["t0"] - ran[0]["q"],
            notify_ran_s=notified - ran[0]["t0"],
        )
    return parts


def _rss_by_role(facts: RunFacts) -> dict[str, float | None]:
    """Peak RSS of the processes that ran finisher deliveries (a pass, or an
    exit with nothing to merge), and of the others, which ran only processors
    (None when every process ran finishers: each consumed every queue)."""
    merging = {d["p"] for d in facts.deliveries if d.get("o") == "ran"}
    by_role: dict[bool, list[int]] = {True: [], False: []}
    for pid, peak in facts.worker_rss_by_pid.items():
        by_role[pid in merging].append(peak)
    return {
        "worker_peak_rss_merging_mib": max(by_role[True]) / 2**20 if by_role[True] else None,
        "worker_peak_rss_parsing_only_mib": max(by_role[False]) / 2**20 if by_role[False] else None,
    }


#: Figures that count something going wrong: a repeated run reports the worst.
WORST_IS_MAX = (
    "lost_uploads",
    "double_merged",
    "notifications_max",
    "dead_lettered",
    "deliveries_errored",
    "max_running_per_commit",
    "merge_passes_max_per_commit",
    "worker_peak_rss_mib",
    "worker_peak_rss_merging_mib",
    "worker_peak_rss_parsing_only_mib",
    "lock_acquisitions_max_per_commit",
    "timed_out",
)
WORST_IS_MIN = ("notifications_min", "commits_notified", "uploads_merged")
#: Figures that are None when something never happened (a commit never notified).
NONE_IS_WORST = (
    "notify_latency_s",
    "notify_latency_p50_s",
    "notify_after_last_processed_s",
    "notify_after_last_processed_p95_s",
)


def combine(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One strategy's figures over repeated runs: the median of each measure,
    except that anything going wrong is reported at its worst (a commit never
    notified in one run leaves its latency None)."""
    if len(runs) == 1:
        return runs[0]
    out: dict[str, Any] = {}
    for name, first in runs[0].items():
        values = [r[name] for r in runs]
        if name in WORST_IS_MAX:  # None: not measured in that run
            out[name] = max((v for v in values if v is not None), default=None)
        elif name in WORST_IS_MIN:
            out[name] = min(values)
        elif isinstance(first, bool | str):
            out[name] = first if all(v == first for v in values) else None
        elif name in NONE_IS_WORST and any(v is None for v in values):
            out[name] = None
        else:  # e.g. no rejected delivery in some runs: the median of the others
            present = [v for v in values if v is not None]
            out[name] = statistics.median(present) if present else None
    out["runs"] = len(runs)
    out["per_run"] = {name: [r[name] for r in runs] for name in FIELDS}
    return out
