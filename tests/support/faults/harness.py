"""What every fault scenario shares: sizes, reports, uploads and settings.

Sizes: the default (reduced) sizes keep the whole suite within minutes on a
shared 2-core machine; ``COVWORKER_TEST_SCALE=full`` selects the sizes the
issue names (RELIABILITY.md has the figures of both). What a scenario
counts as lost or doubled is in ``tests.support.faults.tally``.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis
from dramatiq.brokers.redis import RedisBroker

from app.cli.commands import submit
from app.coverage import FileCoverage, Report
from app.runtime.worker import CovworkerApp, join_queues
from app.settings import Settings
from tests.support.processes import covworker, migrated_database
from tests.support.synthetic import cobertura, job_hits, lcov
from tests.support.writers import to_coverage_json, to_go, to_jacoco

#: ``COVWORKER_TEST_SCALE=full`` runs the full sizes (10,000 fuzz inputs per
#: parser and the like); anything else the reduced ones.
FULL = os.environ.get("COVWORKER_TEST_SCALE", "").lower() == "full"

#: Files and lines of every synthetic report (small: the scenarios are about faults).
FILES, LINES = 3, 12

#: Worker settings that make recovery take seconds in a test (RELIABILITY.md).
FAST_RECOVERY = {
    "COVWORKER_BROKER_HEARTBEAT_TIMEOUT_MS": "5000",
    "COVWORKER_BROKER_MAINTENANCE_CHANCE": "1000000",
    "COVWORKER_FINISHER_LOCK_TIMEOUT_S": "2",
    "COVWORKER_GATE_LEASE_MS": "2000",
    "COVWORKER_MIN_BACKOFF_MS": "100",
    "COVWORKER_MAX_BACKOFF_MS": "2000",
    "COVWORKER_GATE_DELAY_MS": "50",
    "COVWORKER_GATE_JITTER_MS": "100",
}

#: Report writers of the load scenario, by job number modulo 5.
FORMATS: list[tuple[str, Callable[[Report], bytes]]] = [
    ("lcov", lambda r: lcov(_as_hits(r))),
    ("xml", lambda r: cobertura(_as_hits(r))),
    ("json", to_coverage_json),
    ("go.out", to_go),
    ("jacoco.xml", to_jacoco),
]

#: Malformed reports: each must end ``error`` with a reason, nothing else affected.
MALFORMED = [
    b"",
    b"\x00\x01\x02 not a report",
    b"SF:src/a.py\nDA:one,two\nend_of_record\n",
    b'<?xml version="1.0"?><coverage><packages><package',
    b'{"meta": {"format": 3}, "files": {"a.py": {"executed_lines": "no"}}}',
    b"mode: set\nsrc/a.go:1.1,",
    b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;&a;&a;">]>'
    b"<coverage>&b;</coverage>",
]


def sized(reduced: int, full: int) -> int:
    return full if FULL else reduced


def _as_hits(report: Report) -> dict[str, dict[int, int]]:
    return {path: dict(fc.lines) for path, fc in report.files.items()}


def job_report(job: int) -> Report:
    """The coverage job ``job`` reports, as a model (hits of ``tests.support.synthetic``)."""
    return Report(
        files={
            path: FileCoverage(lines=dict(lines))
            for path, lines in job_hits(job, FILES, LINES).items()
        }
    )


def report_bytes(job: int, *, mixed: bool = False) -> tuple[str, bytes]:
    """A report of ``job``: LCOV or Cobertura, or any of five formats if ``mixed``."""
    suffix, write = FORMATS[job % (5 if mixed else 2)]
    return f"job-{job}.{suffix}", write(job_report(job))


@dataclass
class CommitPlan:
    """One commit of a scenario: its repository, SHA, good jobs and malformed reports."""

    repo: str
    sha: str
    jobs: list[int]
    malformed: int = 0
    mixed: bool = False

    def reports(self) -> list[tuple[str, bytes]]:
        good = [report_bytes(job, mixed=self.mixed) for job in self.jobs]
        bad = [(f"bad-{i}.txt", MALFORMED[i % len(MALFORMED)]) for i in range(self.malformed)]
        return good + bad


def plan_commits(
    count: int, uploads: int, *, malformed_every: int = 0, mixed: bool = False, tag: str = "c"
) -> list[CommitPlan]:
    """``count`` commits of ``uploads`` uploads each; every ``malformed_every``-th is bad."""
    plans = []
    for c in range(count):
        bad = uploads // malformed_every if malformed_every else 0
        first = 10_000 * c
        plans.append(
            CommitPlan(
                repo=f"faults/{tag}-{c:03d}",
                sha=f"{c:04x}".rjust(40, "f"),
                jobs=list(range(first, first + uploads - bad)),
                malformed=bad,
                mixed=mixed,
            )
        )
    return plans


def planned_uploads(plans: list[CommitPlan]) -> int:
    """How many uploads ``plans`` send, good and malformed."""
    return sum(len(p.jobs) + p.malformed for p in plans)


def fresh_stack(
    namespace: str, **settings: str
) -> AbstractContextManager[tuple[str, dict[str, str]]]:
    """``migrated_database`` with the environment of workers that recover fast:
    ``FAST_RECOVERY`` with ``settings`` over it."""
    return migrated_database(namespace, **{**FAST_RECOVERY, **settings})


def upload_with_cli(env: dict[str, str], tmp: Path, plan: CommitPlan) -> None:
    """``covworker upload`` of every report of ``plan``, as a CI job would."""
    paths = [str(path) for path in write_reports(tmp, plan)]
    done = covworker(env, "upload", "--create", "--repo", plan.repo, "--commit", plan.sha, *paths)
    assert done.returncode == 0, done.stderr


def join_queue(redis_url: str, namespace: str, timeout_s: float) -> float:
    """Wait until covworker's queues (delayed messages too) are empty; seconds waited.

    The joining broker never runs maintenance itself: requeueing a dead
    worker's messages is left to the workers, as in production.
    """
    client = redis.Redis.from_url(redis_url)
    broker = RedisBroker(client=client, namespace=f"{namespace}-dramatiq", maintenance_chance=0)
    started = time.monotonic()
    try:
        join_queues(
            broker, Settings().queue_names, timeout_ms=int(timeout_s * 1000), interval_ms=100
        )
    finally:
        broker.close()
    return time.monotonic() - started


def record(name: str, **figures: Any) -> None:
    """Print a scenario's figures (``pytest -s`` shows them; RELIABILITY.md quotes them)."""
    print(f"\nFIGURES {name} {json.dumps(figures, default=str, sort_keys=True)}")


def write_reports(tmp: Path, plan: CommitPlan) -> list[Path]:
    folder = tmp / f"{plan.repo.replace('/', '_')}-{plan.sha[:8]}"
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, data in plan.reports():
        path = folder / name
        path.write_bytes(data)
        paths.append(path)
    return paths


def upload_in_process(app: CovworkerApp, tmp: Path, plan: CommitPlan) -> list[int]:
    """What ``covworker upload`` does (``submit``), without a process per commit."""
    return submit(app, plan.repo, plan.sha, write_reports(tmp, plan), [])
