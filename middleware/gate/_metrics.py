"""The gate's Prometheus metrics, and how its reporting failures are seen.

Metrics and log lines come after a decision and never change it: each
report runs inside :data:`Reporting`, which swallows its failure and logs a
warning at most once a minute (with how many failed meanwhile).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from types import TracebackType
from typing import Any

from dramatiq.broker import MessageProxy
from dramatiq.common import q_name


class Reporting:
    """A context manager that swallows a report's failure, and warns of it at most once a period.

    A broken metrics backend or log handler must never change a gate
    decision, but must not go unseen either. The warning goes to its own
    logger (``middleware.gate._metrics.Reporting``), so a failing handler of
    the gate's logger does not swallow it too; if that fails as well, the
    failure is counted and dropped.
    """

    def __init__(self, period_s: float = 60.0) -> None:
        self.period_s = period_s
        self.failures = 0
        self.logger = logging.getLogger(f"{__name__}.Reporting")
        self._last_warning = float("-inf")
        self._unreported = 0
        self._lock = threading.Lock()

    def __enter__(self) -> None:
        return None

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool:
        if exc is None or not isinstance(exc, Exception):
            return False
        now = time.monotonic()
        with self._lock:
            self.failures += 1
            self._unreported += 1
            if now - self._last_warning < self.period_s:
                return True
            self._last_warning, count, self._unreported = now, self._unreported, 0
        with contextlib.suppress(Exception):  # its handler is broken too: counted above
            self.logger.warning(
                "Reporting a gate decision failed (%d time(s) since the last warning): %s: %s; "
                "decisions are unaffected.",
                count,
                type(exc).__name__,
                exc,
            )
        return True


class GateMetrics:
    """The gate's Prometheus metrics, labelled by queue and actor; nothing if disabled.

    ``prometheus_client`` is imported on first use, not at import time:
    Dramatiq's ``Prometheus`` middleware sets ``PROMETHEUS_MULTIPROC_DIR`` at
    process boot, and prometheus-client decides at import whether values are
    shared between processes; made lazily, the gate's metrics are exported by
    Dramatiq's exposition server next to its own.
    """

    _COUNTERS = {
        "acquired": "Slots acquired.",
        "deferred": "Messages deferred over the limit.",
        "debounced": "Messages that opened a debounce window (their copy runs when it closes).",
        "skipped_pending": "Over-limit messages acked without running: a pending copy does "
        "their work.",
        "released": "Slots released.",
        "leases_reclaimed": "Leases of dead holders purged after expiry.",
        "leases_lost": "Leases that expired while their holder ran.",
        "redis_errors": "Gate decisions that failed closed on Redis.",
        "deferrals_failed": "Messages dead-lettered: their deferred copy could never be enqueued.",
        "coalesced_at_enqueue": "Messages not enqueued: a pending message of their actor, key "
        "and queue does their work.",
    }
    _LABELS = ["queue_name", "actor_name"]

    def __init__(self, *, enabled: bool, registry: Any) -> None:
        self.enabled = enabled
        self.registry = registry
        self._metrics: dict[str, Any] = {}
        self._lock = threading.Lock()

    def _get(self, name: str) -> Any:
        if not self._metrics:
            with self._lock:
                if not self._metrics:
                    self._metrics = self._make()
        return self._metrics[name]

    def _make(self) -> dict[str, Any]:
        import prometheus_client as prom

        if self.registry is None:
            self.registry = prom.CollectorRegistry()
        made: dict[str, Any] = {
            name: prom.Counter(f"dramatiq_gate_{name}", doc, self._LABELS, registry=self.registry)
            for name, doc in self._COUNTERS.items()
        }
        made["holders"] = prom.Gauge(
            "dramatiq_gate_holders",
            "Slots held now by this process.",
            self._LABELS,
            registry=self.registry,
            multiprocess_mode="livesum",
        )
        made["deferral_age"] = prom.Histogram(
            "dramatiq_gate_deferral_age_seconds",
            "Time from a message's first deferral to the start of its run.",
            self._LABELS,
            buckets=(0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, float("inf")),
            registry=self.registry,
        )
        made["decision"] = prom.Histogram(
            "dramatiq_gate_decision_seconds",
            "Cost of one gate decision (key, Redis script).",
            self._LABELS,
            buckets=(0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5),
            registry=self.registry,
        )
        return made

    def _labels(self, name: str, message: MessageProxy) -> Any:
        return self._get(name).labels(q_name(message.queue_name), message.actor_name)

    def count(self, name: str, message: MessageProxy, amount: int = 1) -> None:
        if self.enabled:
            self._labels(name, message).inc(amount)

    def holders(self, message: MessageProxy, delta: int) -> None:
        if self.enabled:
            self._labels("holders", message).inc(delta)

    def observe(self, name: str, message: MessageProxy, value: float) -> None:
        if self.enabled:
            self._labels(name, message).observe(value)

    def count_for(self, name: str, queue_name: str, actor_name: str, amount: int = 1) -> None:
        """Count an event of a message not being processed (one being enqueued)."""
        if self.enabled:
            self._get(name).labels(q_name(queue_name), actor_name).inc(amount)
