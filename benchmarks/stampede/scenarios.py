"""The three scenarios: which uploads exist and which messages the driver sends.

- ``burst``: every upload of each commit is processed first (by the real
  processor, in the driver, finisher sends held back), then all the
  finisher messages arrive at once, one per upload: the 167-upload case.
- ``trickle``: processors and finishers run together; the processor
  messages of a commit are spread over ``spread_s`` so uploads finish over time.
- ``fleet``: many commits at once on the fixed worker pool: every processor
  message is sent together, each commit's uploads side by side (a CI run's
  matrix jobs upload together), commit after commit.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import dramatiq
from dramatiq.brokers.redis import RedisBroker

from app.pipeline.processor import process_upload
from app.pipeline.uploads import Accepted, accept_uploads
from app.services import Services
from benchmarks.synthetic import ci_matrix

#: Threads the driver processes ``burst`` uploads with (I/O overlaps parsing).
DRIVER_PROCESSING_THREADS = 4
#: Size of the synthetic reports: files per report, lines per file.
REPORT_FILES, REPORT_LINES = 20, 60


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


def accept(services: Services, commits: int, uploads: int) -> list[Accepted]:
    accepted = []
    for c in range(commits):
        repo, sha = commit_name(c)
        reports = ci_matrix(uploads, REPORT_FILES, REPORT_LINES, first_job=c * uploads)
        accepted.append(accept_uploads(services, repo, sha, reports))
    return accepted


def process_in_driver(services: Services, upload_ids: list[int]) -> None:
    """The real processor, its finisher sends held back (``burst``)."""

    def one(upload_id: int) -> None:
        process_upload(services, upload_id, lambda _repoid, _commitid: None)

    with ThreadPoolExecutor(DRIVER_PROCESSING_THREADS) as pool:
        list(pool.map(one, upload_ids))


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
    broker: RedisBroker,
    *,
    finisher: str,
    commits: int,
    uploads: int,
    spread_s: float,
    phase: Callable[[str], None],
) -> Drive:
    queue = services.settings.queue_name
    phase("uploading")
    accepted = accept(services, commits, uploads)
    if scenario == "burst":
        phase("processing")
        process_in_driver(services, [u for a in accepted for u in a.upload_ids])
        phase("finisher burst")
        started = time.time()
        for a, _, _ in interleave(accepted):
            broker.enqueue(message(queue, finisher, a.repoid, a.commitid))
        return Drive(accepted, started, {a.commitid: started for a in accepted})
    phase("running")
    started = time.time()
    step_ms = spread_s * 1000 / max(1, uploads) if scenario == "trickle" else 0.0
    order = interleave(accepted) if scenario == "trickle" else commit_major(accepted)
    for _, index, upload_id in order:
        delay = round(index * step_ms)
        broker.enqueue(message(queue, "upload_processor", upload_id), delay=delay or None)
    return Drive(accepted, started, {})
