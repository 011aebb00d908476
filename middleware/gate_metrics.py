"""Prometheus metrics of the per-key concurrency gate, labelled by actor.

``prometheus_client`` is imported when the first metric is needed, not at
import time: Dramatiq's ``Prometheus`` middleware sets
``PROMETHEUS_MULTIPROC_DIR`` in ``after_process_boot``, and prometheus-client
decides at import whether values are shared between worker processes.
Created lazily, the gate's metrics land in the same multiprocess directory
and are exported by Dramatiq's exposition server next to its own.

Like Dramatiq's middleware, each gate registers its metrics on a private
registry unless one is given, so several gates (tests) never collide.
"""

from __future__ import annotations

import threading
from typing import Any

#: Histogram buckets of one gate decision, in seconds.
DECISION_BUCKETS = (0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, float("inf"))

#: Histogram buckets of the time between a message's first deferral and its run, in seconds.
DEFERRAL_AGE_BUCKETS = (0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, float("inf"))


class GateMetrics:
    """Counters, a gauge and histograms of the gate, created on first use."""

    def __init__(self, registry: Any = None) -> None:
        self._registry = registry
        self._lock = threading.Lock()
        self._made = False

    def _make(self) -> None:
        with self._lock:
            if self._made:
                return
            import prometheus_client as prom

            registry = self._registry if self._registry is not None else prom.CollectorRegistry()
            self.registry = registry

            def counter(name: str, doc: str) -> Any:
                return prom.Counter(name, doc, ["actor_name"], registry=registry)

            self.acquired = counter("dramatiq_gate_acquired", "Slots acquired.")
            self.deferred = counter("dramatiq_gate_deferred", "Messages deferred over the limit.")
            self.coalesced = counter(
                "dramatiq_gate_coalesced", "Over-limit messages acked under a pending copy."
            )
            self.released = counter("dramatiq_gate_released", "Slots released.")
            self.reclaimed = counter(
                "dramatiq_gate_leases_reclaimed", "Leases of dead holders purged after expiry."
            )
            self.lost = counter("dramatiq_gate_leases_lost", "Leases that expired while running.")
            self.redis_errors = counter(
                "dramatiq_gate_redis_errors", "Gate decisions that failed closed on Redis."
            )
            self.holders = prom.Gauge(
                "dramatiq_gate_holders",
                "Slots held now by this process.",
                ["actor_name"],
                registry=registry,
                multiprocess_mode="livesum",
            )
            self.deferral_age = prom.Histogram(
                "dramatiq_gate_deferral_age_seconds",
                "Time from a message's first deferral to the start of its run.",
                ["actor_name"],
                buckets=DEFERRAL_AGE_BUCKETS,
                registry=registry,
            )
            self.decision = prom.Histogram(
                "dramatiq_gate_decision_seconds",
                "Cost of one gate decision (key, Redis script, deferral enqueue).",
                ["actor_name"],
                buckets=DECISION_BUCKETS,
                registry=registry,
            )
            self._made = True

    def __getattr__(self, name: str) -> Any:
        # Only reached for metric attributes not yet made.
        if name.startswith("_"):
            raise AttributeError(name)
        self._make()
        return object.__getattribute__(self, name)

    def value(self, name: str, actor_name: str) -> float:
        """The current value of a counter or gauge for one actor (tests, benchmarks)."""
        sample_name = name if name == "dramatiq_gate_holders" else f"{name}_total"
        got = self.registry.get_sample_value(sample_name, {"actor_name": actor_name})
        return float(got or 0.0)
