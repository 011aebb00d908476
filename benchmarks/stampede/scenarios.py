"""The three scenarios: which uploads exist and which messages the driver sends.

- ``burst``: every upload of each commit is processed first (by the real
  processor, in the driver, finisher sends held back), then all the
  finisher messages arrive at once, one per upload: the 167-upload case.
- ``trickle``: processors and finishers run together; the processor
  messages of a commit are spread over ``spread_s`` so uploads finish over time.
- ``fleet``: many commits at once on the fixed worker pool: every processor
  message is sent together, each commit's uploads side by side (a CI run's
  matrix jobs upload together), commit after commit.
- ``monorepo``: big reports (``--files`` x ``--lines``, default 20,000 x 50,
  branches on every tenth line; LCOV), processed by the workers, arriving
  as a ``burst`` (all processor messages at once), a ``trickle`` (evenly
  over ``spread_s``) or in 4 ``waves`` (a quarter at a time, evenly over
  ``spread_s``).
- ``backlog``: ``fleet`` behind a backlog: ``--backlog`` processor messages
  of unrelated uploads (other repositories, small reports) are queued
  first, then the measured commits' uploads, commit after commit.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import dramatiq
import redis

from app.ingest.accept import Accepted, accept_uploads
from app.pipeline.processor import process_upload
from app.runtime.services import Services
from app.runtime.state import commit_key, gate_prefix
from app.settings import Settings
from benchmarks.stampede.config import WAVES
from middleware import PerKeyConcurrency
from tests.support.synthetic import ci_matrix, monorepo_lcov

#: Reports generated and stored at a time while uploading (big reports).
ACCEPT_CHUNK = 10
#: Threads the driver processes ``burst`` uploads with (I/O overlaps parsing).
DRIVER_PROCESSING_THREADS = 4
#: Size of the synthetic reports: files per report, lines per file.
REPORT_FILES, REPORT_LINES = 20, 60
#: ``monorepo``'s report size by default: 20,000 files x 50 lines = 1,000,000 lines.
MONOREPO_FILES, MONOREPO_LINES = 20_000, 50
#: ``backlog``: unrelated uploads per commit of the backlog's own repositories.
BACKLOG_UPLOADS_PER_COMMIT = 20


@dataclass(frozen=True)
class Shape:
    """What the uploads of a scenario look like."""

    #: files per report, lines per file; ``monorepo`` reports are LCOV with branches.
    files: int = REPORT_FILES
    lines: int = REPORT_LINES
    monorepo: bool = False
    #: ``monorepo``: "burst", "trickle" or "waves".
    arrival: str = "burst"
    #: ``backlog``: unrelated processor messages queued before the measured ones.
    backlog: int = 0


@dataclass(frozen=True)
class Drive:
    """What the driver did: the commits and when the clock started."""

    commits: list[Accepted]
    #: Wall time the scenario started (settle time is measured from here).
    started: float
    #: ``burst`` only: wall time the finisher messages were sent, per commit id.
    released: dict[int, float]


def commit_name(index: int) -> tuple[str, str]:
    return f"bench/service-{index:03d}", f"{index + 1:040x}"


def reports_of(shape: Shape, uploads: int, first_job: int) -> list[tuple[str, bytes]]:
    if not shape.monorepo:
        return ci_matrix(uploads, shape.files, shape.lines, first_job=first_job)
    return [
        (f"job-{job}.lcov", monorepo_lcov(job, shape.files, shape.lines))
        for job in range(first_job, first_job + uploads)
    ]


def accept(
    services: Services, commits: int, uploads: int, shape: Shape | None = None
) -> list[Accepted]:
    shape = shape or Shape()
    accepted = []
    for c in range(commits):
        repo, sha = commit_name(c)
        for start in range(0, uploads, ACCEPT_CHUNK):  # big reports: a few in memory at once
            n = min(ACCEPT_CHUNK, uploads - start)
            reports = reports_of(shape, n, c * uploads + start)
            batch = accept_uploads(services, repo, sha, reports)
            if start == 0:
                accepted.append(batch)
            else:
                accepted[-1].upload_ids.extend(batch.upload_ids)
    return accepted


def accept_backlog(services: Services, messages: int) -> list[int]:
    """Uploads of unrelated repositories (small reports), ``messages`` of them."""
    ids: list[int] = []
    for c in range(-(-messages // BACKLOG_UPLOADS_PER_COMMIT)):
        n = min(BACKLOG_UPLOADS_PER_COMMIT, messages - len(ids))
        reports = ci_matrix(n, 2, 20, first_job=c * BACKLOG_UPLOADS_PER_COMMIT)
        ids += accept_uploads(
            services, f"bench/backlog-{c:04d}", f"{c + 1:040x}", reports
        ).upload_ids
    return ids


def process_in_driver(services: Services, upload_ids: list[int]) -> None:
    """The real processor, its finisher sends held back (``burst``)."""

    def one(upload_id: int) -> None:
        process_upload(services, upload_id, lambda _repoid, _commitid: None)

    with ThreadPoolExecutor(DRIVER_PROCESSING_THREADS) as pool:
        list(pool.map(one, upload_ids))


def coalescing_sender(
    broker: dramatiq.Broker, client: redis.Redis, settings: Settings, *, debounce_ms: int
) -> Callable[[int, int], None]:
    """Send a commit's finisher as covworker's processor does: through the gate's enqueue.

    ``app.actors`` sends each finisher with ``PerKeyConcurrency.enqueue``, which
    drops it while a finisher of the commit is pending on its queue (not yet
    started), and opens the commit's debounce window (``debounce_ms``, the
    workers' ``COVWORKER_FINISHER_DEBOUNCE_MS``) with the first. The driver
    declares a stand-in of the finisher with the same gate options on its own
    broker, and a gate on the workers' keys.
    """
    gate = PerKeyConcurrency(
        client=client,
        key_prefix=gate_prefix(settings.namespace),
        pending_ttl_ms=settings.gate_pending_ttl_ms,
    )
    broker.add_middleware(gate)

    @dramatiq.actor(
        broker=broker,
        queue_name=settings.queue_name,
        concurrency_key=commit_key,
        concurrency_skip_if_pending=True,
        concurrency_debounce_ms=debounce_ms,
    )
    def upload_finisher(repoid: int, commitid: int) -> None: ...

    actor = upload_finisher

    def send(repoid: int, commitid: int) -> None:
        gate.enqueue(broker, actor.message(repoid, commitid))

    return send


def message(queue: str, actor: str, *args: int) -> dramatiq.Message[object]:
    return dramatiq.Message(queue_name=queue, actor_name=actor, args=args, kwargs={}, options={})


def interleave(commits: list[Accepted]) -> list[tuple[Accepted, int, int]]:
    """(commit, index within the commit, upload id), round robin across commits."""
    rows = [(a, i, u) for a in commits for i, u in enumerate(a.upload_ids)]
    return sorted(rows, key=lambda row: (row[1], row[0].commitid))


def commit_major(commits: list[Accepted]) -> list[tuple[Accepted, int, int]]:
    """(commit, index within the commit, upload id), commit after commit."""
    return [(a, i, u) for a in commits for i, u in enumerate(a.upload_ids)]


def drive(
    scenario: str,
    services: Services,
    broker: dramatiq.Broker,
    *,
    finisher: str,
    commits: int,
    uploads: int,
    spread_s: float,
    phase: Callable[[str], None],
    shape: Shape | None = None,
    send_finisher: Callable[[int, int], None] | None = None,
) -> Drive:
    shape = shape or Shape()
    queue = services.settings.queue_name
    phase("uploading")
    accepted = accept(services, commits, uploads, shape)
    backlog = accept_backlog(services, shape.backlog) if shape.backlog else []
    if scenario == "burst":
        phase("processing")
        process_in_driver(services, [u for a in accepted for u in a.upload_ids])
        phase("finisher burst")
        started = time.time()
        for a, _, _ in interleave(accepted):
            if send_finisher is not None:  # as the processor sends it (coalescing at enqueue)
                send_finisher(a.repoid, a.commitid)
            else:
                broker.enqueue(message(queue, finisher, a.repoid, a.commitid))
        return Drive(accepted, started, {a.commitid: started for a in accepted})
    phase("running")
    started = time.time()
    for upload_id in backlog:  # queued first: the measured uploads wait behind them
        broker.enqueue(message(queue, "upload_processor", upload_id))
    arrival = shape.arrival if scenario == "monorepo" else scenario
    order = interleave(accepted) if arrival == "trickle" else commit_major(accepted)
    for _, index, upload_id in order:
        delay = round(arrival_ms(arrival, index, uploads, spread_s))
        broker.enqueue(message(queue, "upload_processor", upload_id), delay=delay or None)
    return Drive(accepted, started, {})


def arrival_ms(arrival: str, index: int, uploads: int, spread_s: float) -> float:
    """When upload ``index`` of a commit's ``uploads`` arrives, ms after the start."""
    if arrival == "trickle":
        return index * spread_s * 1000 / max(1, uploads)
    if arrival == "waves":
        wave = index * WAVES // max(1, uploads)
        return wave * spread_s * 1000 / WAVES
    return 0.0
