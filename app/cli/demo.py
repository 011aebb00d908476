"""``covworker demo``: a CI matrix's stampede on one commit, embedded, measured."""

from __future__ import annotations

import time
from pathlib import Path

import sqlalchemy as sa
from rich.table import Table

from app.cli.render import console, print_json, with_unit
from app.db.models import Notification, Upload
from app.embedded import embedded
from app.ingest.accept import accept_uploads
from app.queries import commit_report
from app.runtime.worker import CovworkerApp

DEMO_REPO = "demo/matrix"
DEMO_SHA = "d" * 40
#: Real coverage.py reports of three test jobs, Cobertura and LCOV (see its README).
DEMO_REPORTS = Path(__file__).parent / "demo_reports"


def sample_uploads(uploads: int) -> list[tuple[str, bytes]]:
    """``uploads`` reports of a CI matrix: the bundled reports, in turn."""
    reports = sorted(p for p in DEMO_REPORTS.iterdir() if p.suffix in (".xml", ".info"))
    return [
        (f"job-{job}-{reports[job % len(reports)].name}", reports[job % len(reports)].read_bytes())
        for job in range(uploads)
    ]


def _finisher_count(app: CovworkerApp, sample: str) -> float:
    """A gate counter of the finisher (the embedded runtime turns the gate's metrics on)."""
    registry = app.gate.metrics.registry
    labels = {"queue_name": app.settings.queue_name, "actor_name": "upload_finisher"}
    return float((registry.get_sample_value(sample, labels) if registry else None) or 0.0)


#: The figures the demo's table shows; ``--counters`` adds the finisher's own.
SHOWN = (
    "uploads",
    "uploads_merged",
    "merge_passes",
    "notifications",
    "notify_after_last_processed_ms",
    "wall_s",
    "coverage",
)
COUNTERS = (
    "finisher_messages",
    "finisher_deferred",
    "finisher_coalesced",
    "finisher_early_exits",
    "finisher_lock_busy",
    "lock_acquisitions",
)
LABELS = {
    "notify_after_last_processed_ms": "notified after the last upload, ms",
    "wall_s": "wall time, s",
    "coverage": "coverage, %",
}


def run_demo(*, uploads: int, threads: int, as_json: bool, counters: bool = False) -> int:
    reports = sample_uploads(uploads)
    with embedded(threads=threads) as runtime:
        app = runtime.app
        from app import actors  # declared on the embedded app

        started = time.monotonic()
        accepted = accept_uploads(
            app.services, DEMO_REPO, DEMO_SHA, reports, send_processor=actors.send_processor
        )
        runtime.wait_settled()
        wall_s = time.monotonic() - started
        stats = app.services.state.stats(accepted.repoid, accepted.commitid)
        with app.services.sessions() as session:
            last_processed = session.scalar(
                sa.select(sa.func.max(Upload.processed_at)).where(
                    Upload.commit_id == accepted.commitid
                )
            )
            notified = (
                session.execute(
                    sa.select(Notification.created_at).where(
                        Notification.commit_id == accepted.commitid
                    )
                )
                .scalars()
                .all()
            )
        report = commit_report(app.services, DEMO_REPO, DEMO_SHA)
        deferred = _finisher_count(app, "dramatiq_gate_deferred_total")
        coalesced = _finisher_count(app, "dramatiq_gate_skipped_pending_total")
    assert report is not None
    latency_ms = (
        (min(notified) - last_processed).total_seconds() * 1000
        if notified and last_processed
        else None
    )
    figures = {
        "uploads": uploads,
        "uploads_merged": len(report["upload_ids"]),
        "finisher_messages": stats["finisher_runs"],  # deliveries that ran
        "finisher_deferred": int(deferred),
        "finisher_coalesced": int(coalesced),
        "finisher_early_exits": stats["early_exits"],
        "finisher_lock_busy": stats["lock_busy"],
        "merge_passes": stats["merge_passes"],
        "lock_acquisitions": stats["lock_acquisitions"],
        "notifications": len(notified),
        "notify_after_last_processed_ms": round(latency_ms, 1) if latency_ms is not None else None,
        "wall_s": round(wall_s, 2),
        "coverage": report["totals"]["coverage"],
        "coverage_display": report["totals"].get("coverage_display"),
    }
    if as_json:
        print_json(figures)
        return 0
    totals = report["totals"]
    console.print(
        f"{DEMO_REPO} @ {DEMO_SHA[:12]}: {figures['uploads_merged']} of {uploads} uploads merged "
        f"into one report, coverage {with_unit(figures['coverage_display'])} "
        f"({totals['hits']} of {totals['lines']} lines hit)",
        highlight=False,
        soft_wrap=True,
    )
    table = Table(title=f"how it ran ({threads} worker threads, in this process)")
    table.add_column("measure")
    table.add_column("value", justify="right")
    for name in SHOWN if not counters else [*SHOWN, *COUNTERS]:
        value = figures["coverage_display" if name == "coverage" else name]
        table.add_row(
            LABELS.get(name, name.replace("_", " ")), "-" if value is None else str(value)
        )
    console.print(table)
    return 0
