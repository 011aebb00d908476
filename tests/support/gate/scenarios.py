"""Workloads run through the gate by unit and integration tests alike."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

import dramatiq
from dramatiq.broker import MessageProxy
from prometheus_client import CollectorRegistry

from middleware import PerKeyConcurrency


@dataclass
class FinisherRuns:
    """What a fungible, finisher-like actor did: items recorded, runs, items merged."""

    recorded: dict[int, set[int]] = field(default_factory=dict)
    merged: list[tuple[int, int]] = field(default_factory=list)
    runs: int = 0
    sent: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


def coalescing_finisher(
    broker: dramatiq.Broker,
    *,
    commits: int,
    items: int,
    debounce_ms: int = 0,
    send_through: PerKeyConcurrency | None = None,
) -> FinisherRuns:
    """Stampede a coalescing, limit-1 finisher like a CI matrix does; wait for the end.

    Each producer records its item as pending for its commit, then sends a
    finisher message for the commit (as the upload processor does), through
    ``send_through.enqueue`` (coalescing at enqueue) if given. A finisher run
    takes and merges *everything* pending for its commit, so messages of one
    commit are fungible.
    """
    state = FinisherRuns(recorded={c: set() for c in range(commits)})

    @dramatiq.actor(
        broker=broker,
        concurrency_key=lambda commit: f"commit-{commit}",
        concurrency_limit=1,
        concurrency_skip_if_pending=True,
        concurrency_debounce_ms=debounce_ms,
        max_retries=0,
    )
    def finisher(commit: int) -> None:
        with state.lock:
            batch = sorted(state.recorded[commit])
            state.recorded[commit].clear()
            state.runs += 1
        time.sleep(0.005)  # the merge itself
        with state.lock:
            state.merged += [(commit, item) for item in batch]

    def produce(first: int) -> None:
        for item in range(first, items, 4):
            commit = item % commits
            with state.lock:
                state.recorded[commit].add(item)
                state.sent += 1
            if send_through is None:
                finisher.send(commit)
            else:
                send_through.enqueue(broker, finisher.message(commit))

    producers = [threading.Thread(target=produce, args=(first,)) for first in range(4)]
    for producer in producers:
        producer.start()
    for producer in producers:
        producer.join()
    broker.join(finisher.queue_name, timeout=60_000)
    return state


def assert_no_item_lost(
    state: FinisherRuns, gate: PerKeyConcurrency, *, items: int, skipped_at: str = "delivery"
) -> None:
    commits = len(state.recorded)
    assert sorted(state.merged) == sorted((item % commits, item) for item in range(items))
    assert all(not pending for pending in state.recorded.values())
    name = "skipped_pending" if skipped_at == "delivery" else "coalesced_at_enqueue"
    skipped = metric(gate, f"dramatiq_gate_{name}", "finisher")
    assert skipped > 0, "the stampede must have exercised skipping under a pending copy"
    assert state.runs < state.sent


@dataclass
class RecordedRuns:
    """Start and end of every run of the recording actor: ``(key, seq, start, end)``."""

    runs: list[tuple[str, int, float, float]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def declare_recorder(broker: dramatiq.Broker, *, limit: int, **options: Any) -> tuple[Any, Any]:
    state = RecordedRuns()

    @dramatiq.actor(
        broker=broker,
        concurrency_key=lambda key, seq, hold_ms: key,
        concurrency_limit=limit,
        max_retries=0,
        **options,
    )
    def record(key: str, seq: int, hold_ms: int) -> None:
        start = time.monotonic()
        time.sleep(hold_ms / 1000)
        end = time.monotonic()
        with state.lock:
            state.runs.append((key, seq, start, end))

    return record, state


def by_repo(repo: int, n: int = 0) -> str:
    return f"repo-{repo}"


def declare(broker: dramatiq.Broker, **options: Any) -> dramatiq.Actor[Any, Any]:
    @dramatiq.actor(broker=broker, concurrency_key=by_repo, max_retries=0, **options)
    def finish(repo: int, n: int = 0) -> None:
        pass

    return finish


def declare_batched(broker: dramatiq.Broker) -> dramatiq.Actor[Any, Any]:
    """A fungible actor keyed by its argument whose first message opens a
    60 s debounce window (nothing here waits for the window to close)."""

    @dramatiq.actor(
        broker=broker,
        concurrency_key=lambda k: k,
        concurrency_skip_if_pending=True,
        concurrency_debounce_ms=60_000,
        max_retries=0,
    )
    def batched(k: str) -> None: ...

    return batched


def delivery(actor: dramatiq.Actor[Any, Any], *args: Any, **options: Any) -> MessageProxy:
    message = actor.message_with_options(args=args, **options)
    return MessageProxy(message)


def metric(
    gate: PerKeyConcurrency, name: str, actor_name: str, queue_name: str = "default"
) -> float:
    """The value of one of the gate's counters or gauges (the gate is built with metrics on)."""
    sample = name if name == "dramatiq_gate_holders" else f"{name}_total"
    labels = {"queue_name": queue_name, "actor_name": actor_name}
    value = gate.metrics.registry.get_sample_value(sample, labels) if gate.metrics.registry else 0
    return float(value or 0.0)


def new_gate(redis_client: Any, namespace: str, **options: Any) -> PerKeyConcurrency:
    """The gate on real Redis (or a cluster) under the test's namespace, with its own
    metrics registry: metrics on, no jitter, 20 ms between deferrals unless
    ``options`` say otherwise."""
    defaults = {"concurrency_delay_ms": 20, "concurrency_jitter_ms": 0, "metrics": True}
    return PerKeyConcurrency(
        client=redis_client,
        key_prefix=f"{namespace}:gate",
        registry=CollectorRegistry(),
        **{**defaults, **options},
    )
