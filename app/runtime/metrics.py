"""Prometheus metrics of the pipeline, beside Dramatiq's and the gate's.

The steps in ``app.pipeline`` call one method here per event; each method
swallows (and logs) its own failure, so a metric can never change what the
pipeline does. ``prometheus_client`` is imported on first use, as in
``middleware.gate._metrics``: Dramatiq's ``Prometheus`` middleware sets the
multiprocess directory in ``after_process_boot`` and prometheus-client reads
it at import. ``MetricsAtBoot`` then creates every series of known labels at
zero, so a dashboard finds them from start-up on, not after the first event.

The sweeper process (``covworker sweep --every``) serves its own registry
with ``StateCollector`` added: queue depths and pending uploads, read from
Redis and PostgreSQL at scrape time.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import dramatiq
import sqlalchemy as sa
from dramatiq.broker import MessageProxy
from dramatiq.middleware import Middleware

from app.coverage.parse import PARSERS
from app.db.models import PENDING_STATES, Upload, as_utc, utcnow
from app.errors import MalformedReport, ReportTooLarge, UnknownFormat

logger = logging.getLogger(__name__)

FORMATS = (*PARSERS, "junit")  # every format a parser reads (junit: test results), at zero
UNKNOWN_FORMAT = "unknown"
#: ``covworker_uploads_processed_total`` outcomes: parsed, or the error's class.
OUTCOMES = ("processed", "unknown_format", "malformed", "too_large", "error")
WEBHOOK_OUTCOMES = ("delivered", "failed")
REDRIVE_KINDS = ("reprocessed", "refinished", "renotified")
#: Why pull-request feedback was held back without a provider call.
HELD_FEEDBACK = ("over_budget", "unknown_commit")

SECONDS_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
LAG_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800)
PASS_BUCKETS = (1, 2, 5, 10, 25, 50, 100, 250, 500, 1000)


#: An upload's ``outcome`` label by the class of the error that ended it; any other is "error".
ERROR_OUTCOMES: tuple[tuple[type[Exception], str], ...] = (
    (UnknownFormat, "unknown_format"),
    (MalformedReport, "malformed"),
    (ReportTooLarge, "too_large"),
)


def outcome_of(exc: BaseException | None) -> str:
    if exc is None:
        return "processed"
    return next((label for kind, label in ERROR_OUTCOMES if isinstance(exc, kind)), "error")


class PipelineMetrics:
    """The pipeline's counters and histograms, created on first use."""

    def __init__(self, registry: Any = None) -> None:
        self._registry = registry
        self._lock = threading.Lock()
        self._made = False

    def make(self) -> None:
        """Create every metric and every series of known labels (at zero)."""
        with self._lock:
            if self._made:
                return
            import prometheus_client as prom

            reg = self._registry if self._registry is not None else prom.CollectorRegistry()
            self.registry = reg
            self.processed = prom.Counter(
                "covworker_uploads_processed",
                "Uploads parsed, by detected format and outcome (an error's class).",
                ["format", "outcome"],
                registry=reg,
            )
            self.merged = prom.Counter(
                "covworker_uploads_merged", "Uploads merged into a commit report.", registry=reg
            )
            self.parse_seconds = prom.Histogram(
                "covworker_parse_seconds",
                "Time to detect and parse one upload.",
                ["format"],
                buckets=SECONDS_BUCKETS,
                registry=reg,
            )
            self.merge_seconds = prom.Histogram(
                "covworker_merge_pass_seconds",
                "Time of one merge pass (one transaction).",
                buckets=SECONDS_BUCKETS,
                registry=reg,
            )
            self.pass_uploads = prom.Histogram(
                "covworker_merge_pass_uploads",
                "Uploads merged by one merge pass.",
                buckets=PASS_BUCKETS,
                registry=reg,
            )
            self.notify_lag = prom.Histogram(
                "covworker_notify_lag_seconds",
                "From a commit's last processed upload to its notification.",
                buckets=LAG_BUCKETS,
                registry=reg,
            )
            self.webhooks = prom.Counter(
                "covworker_webhook_deliveries",
                "Webhook POSTs by outcome (a failed one is retried).",
                ["outcome"],
                registry=reg,
            )
            self.redrives = prom.Counter(
                "covworker_sweep_redrives",
                "Uploads (or commits, for renotified) the sweep put back on their way.",
                ["kind"],
                registry=reg,
            )
            self.raw_dropped = prom.Counter(
                "covworker_raw_reports_dropped",
                "Raw reports of merged uploads dropped by retention.",
                registry=reg,
            )
            self.feedback_held = prom.Counter(
                "covworker_pr_feedback_held",
                "Pull-request deliveries held back without a provider call: deferred "
                "(a repository over its budget of calls) or skipped (a commit the "
                "provider does not know).",
                ["reason"],
                registry=reg,
            )
            self.actor_cpu = prom.Counter(
                "covworker_actor_cpu_seconds",
                "CPU seconds of the worker threads running an actor's messages, by actor: "
                "what each stage costs.",
                ["actor"],
                registry=reg,
            )
            for reason in HELD_FEEDBACK:
                self.feedback_held.labels(reason)
            for fmt in (*FORMATS, UNKNOWN_FORMAT):
                self.parse_seconds.labels(fmt)
                for outcome in OUTCOMES:
                    self.processed.labels(fmt, outcome)
            for outcome in WEBHOOK_OUTCOMES:
                self.webhooks.labels(outcome)
            for kind in REDRIVE_KINDS:
                self.redrives.labels(kind)
            self._made = True

    def _safely(self, what: str, record: Any) -> None:
        try:
            self.make()
            record()
        except Exception:  # a metric must never change what the pipeline does
            logger.warning("Could not record the %s metric.", what, exc_info=True)

    # -- one method per event ------------------------------------------------

    def upload_parsed(self, fmt: str | None, exc: BaseException | None, seconds: float) -> None:
        label = fmt or UNKNOWN_FORMAT

        def record() -> None:
            self.processed.labels(label, outcome_of(exc)).inc()
            self.parse_seconds.labels(label).observe(seconds)

        self._safely("parse", record)

    def merge_pass(self, uploads: int, seconds: float) -> None:
        def record() -> None:
            self.merged.inc(uploads)
            self.pass_uploads.observe(uploads)
            self.merge_seconds.observe(seconds)

        self._safely("merge", record)

    def notified(self, last_processed_at: datetime | None) -> None:
        if last_processed_at is None:
            return
        lag = max(0.0, (utcnow() - as_utc(last_processed_at)).total_seconds())
        self._safely("notify lag", lambda: self.notify_lag.observe(lag))

    def webhook(self, outcome: str) -> None:
        self._safely("webhook", lambda: self.webhooks.labels(outcome).inc())

    def swept(self, reprocessed: int, refinished: int, renotified: int) -> None:
        def record() -> None:
            self.redrives.labels("reprocessed").inc(reprocessed)
            self.redrives.labels("refinished").inc(refinished)
            self.redrives.labels("renotified").inc(renotified)

        self._safely("sweep", record)

    def feedback_held_back(self, reason: str) -> None:
        self._safely("feedback held", lambda: self.feedback_held.labels(reason).inc())

    def dropped_raw(self, uploads: int) -> None:
        self._safely("retention", lambda: self.raw_dropped.inc(uploads))

    def actor_ran(self, actor: str, cpu_s: float) -> None:
        self._safely("actor CPU", lambda: self.actor_cpu.labels(actor).inc(cpu_s))


def last_processed_at(session: sa.orm.Session, commitid: int) -> datetime | None:
    return session.scalar(
        sa.select(sa.func.max(Upload.processed_at)).where(Upload.commit_id == commitid)
    )


class MetricsAtBoot(Middleware):
    """Create the pipeline's series in each worker process once Dramatiq's
    ``Prometheus`` middleware has set the multiprocess directory.

    At worker boot, not process boot: Dramatiq runs ``after_*`` hooks in
    reverse middleware order, and every process-boot hook (Prometheus's
    included) has run before the worker boots, whatever the order.
    """

    def __init__(self, metrics: PipelineMetrics) -> None:
        self.metrics = metrics

    def after_worker_boot(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        self.metrics.make()


class ActorCpu(Middleware):
    """Count the CPU time of each message on the thread that runs it
    (``time.thread_time``: the thread's own CPU, not its waits for the GIL,
    the database or a lock), by actor: ``covworker_actor_cpu_seconds``. A
    message the gate defers is skipped before this middleware sees it, and
    not counted."""

    def __init__(self, metrics: PipelineMetrics) -> None:
        self.metrics = metrics
        self._started = threading.local()

    def before_process_message(self, broker: dramatiq.Broker, message: MessageProxy) -> None:
        self._started.at = time.thread_time()

    def after_process_message(
        self,
        broker: dramatiq.Broker,
        message: MessageProxy,
        *,
        result: Any = None,
        exception: BaseException | None = None,
    ) -> None:
        self._count(message)

    def after_skip_message(self, broker: dramatiq.Broker, message: MessageProxy) -> None:
        self._count(message)

    def _count(self, message: MessageProxy) -> None:
        started = getattr(self._started, "at", None)
        if started is not None:
            self._started.at = None
            self.metrics.actor_ran(message.actor_name, time.thread_time() - started)


class StateCollector:
    """Queue depths (the broker's, ``app.runtime.brokers.QueueInspector``) and pending
    uploads (PostgreSQL), read at scrape time."""

    def __init__(self, services: Any, inspector: Any, queues: list[str]) -> None:
        self.services = services
        self.inspector = inspector
        self.queues = queues

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily

        depth = GaugeMetricFamily(
            "covworker_queue_depth",
            "Messages of a Dramatiq queue: enqueued (ready or running), delayed, dead-lettered.",
            labels=["queue", "state"],
        )
        pending = GaugeMetricFamily(
            "covworker_uploads_pending", "Uploads not yet final, by state.", labels=["state"]
        )
        try:
            for queue in self.queues:
                found = self.inspector.queue_state(queue)
                depth.add_metric([queue, "enqueued"], float(found.stored))
                depth.add_metric([queue, "delayed"], float(found.delayed))
                depth.add_metric([queue, "dead"], float(found.dead))
            with self.services.sessions() as session:
                counts = dict(
                    session.execute(
                        sa.select(Upload.state, sa.func.count())
                        .where(Upload.state.in_(PENDING_STATES))
                        .group_by(Upload.state)
                    ).all()
                )
            for state in PENDING_STATES:
                pending.add_metric([state.value], float(counts.get(state.value, 0)))
        except Exception:  # a scrape must answer even when a service is down
            logger.warning("Could not read queue depths or pending uploads.", exc_info=True)
        yield depth
        yield pending
