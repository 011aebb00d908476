"""What storing each file's lines in windows adds to a merge pass.

The merge pass stores every file of the version it writes in windows of 500
lines (``app.merge.file_lines.store_file_lines``), so the file page never decodes
the report. This runs the real finisher (``finish_commit``: decode, merge,
encode, summarise, store) on a fresh PostgreSQL database (or SQLite) with
fakeredis, for commits of ``--uploads`` processed uploads each, alternately
with the windows stored and with ``store_file_lines`` replaced by nothing
(the pass before it existed), and reports, per shape of report, the
finisher's CPU (``time.process_time``; the database server's own work is in
the wall time) and the storing's own CPU, medians of ``--repeat`` commits.

    python benchmarks/file_lines_merge.py --shape 20000x50 --shape 1x1000000 --uploads 2
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.db.models import ReportFileLines
from app.merge import file_lines
from app.pipeline import finisher
from app.runtime.services import Services
from app.settings import Settings
from tests.support.pipeline import Pipeline, fakeredis_services
from tests.support.services import bench_database
from tests.support.synthetic import monorepo_lcov


def one_file_lcov(job: int, lines: int) -> bytes:
    """One file of ``lines`` lines, hits varying by job, a branch line in ten."""
    out = ["SF:src/big.py"]
    out += [f"BRDA:{n},0,0,{(n + job) % 2}\nBRDA:{n},0,1,1" for n in range(5, lines + 1, 10)]
    out += [f"DA:{n},{(n + job) % 3}" for n in range(1, lines + 1)]
    return "\n".join([*out, "end_of_record", ""]).encode()


def merge_commit(services: Services, sha: str, uploads: list[bytes]) -> tuple[float, float]:
    """Accept, process and merge one commit's uploads; the finisher's (CPU, wall) seconds."""
    pipeline = Pipeline(services)
    accepted = pipeline.upload(
        [(f"u{i}.info", b) for i, b in enumerate(uploads)], repo="bench/lines", sha=sha
    )
    for upload_id in accepted.upload_ids:
        pipeline.process(upload_id)
    cpu, wall = time.process_time(), time.perf_counter()
    outcome = pipeline.finish(accepted.repoid, accepted.commitid)
    assert len(outcome.merged) == len(uploads), outcome
    return time.process_time() - cpu, time.perf_counter() - wall


def stored_rows(services: Services) -> tuple[int, int]:
    """Rows of ``report_file_lines``, and the bytes of their windows."""
    with services.sessions() as session:
        rows = session.scalar(sa.select(sa.func.count()).select_from(ReportFileLines))
        stored = session.scalar(sa.select(sa.func.sum(sa.func.length(ReportFileLines.data))))
    return rows or 0, stored or 0


def run_shape(
    services: Services, files: int, lines: int, uploads: int, repeat: int
) -> dict[str, Any]:
    if files == 1:
        blobs = [one_file_lcov(job, lines) for job in range(uploads)]
    else:
        blobs = [monorepo_lcov(job, files, lines) for job in range(uploads)]
    real_store: Callable[..., None] = file_lines.store_file_lines
    storing: list[float] = []

    def timed_store(*args: Any, **kwargs: Any) -> None:
        started = time.process_time()
        real_store(*args, **kwargs)
        storing.append(time.process_time() - started)

    rows_before, stored_before = stored_rows(services)
    cases: dict[str, list[tuple[float, float]]] = {"without": [], "with": []}
    for _ in range(repeat):
        for case in ("without", "with"):
            store = timed_store if case == "with" else (lambda *a, **k: None)
            # Where the settled version's windows are stored after its notification.
            file_lines.store_file_lines = finisher.store_file_lines = store
            try:
                cases[case].append(merge_commit(services, uuid.uuid4().hex * 2, blobs))
            finally:
                file_lines.store_file_lines = finisher.store_file_lines = real_store
    rows, stored = stored_rows(services)
    rows, stored = rows - rows_before, stored - stored_before
    without_cpu = statistics.median(c for c, _ in cases["without"])
    with_cpu = statistics.median(c for c, _ in cases["with"])
    return {
        "shape": f"{files:,} files x {lines:,} lines, {uploads} uploads",
        "without_cpu": without_cpu,
        "with_cpu": with_cpu,
        "store_cpu": statistics.median(storing),
        "without_wall": statistics.median(w for _, w in cases["without"]),
        "with_wall": statistics.median(w for _, w in cases["with"]),
        "rows": rows // repeat,
        "stored_mib": stored / repeat / 2**20,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", action="append", default=[], help="FILESxLINES, repeatable")
    parser.add_argument("--uploads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3, help="commits per case")
    parser.add_argument(
        "--admin-database-url",
        default="postgresql+psycopg://postgres@127.0.0.1:5432/postgres",
        help="a fresh database is made on this server and dropped after; 'sqlite' for SQLite",
    )
    args = parser.parse_args()
    shapes = [tuple(int(n) for n in s.split("x")) for s in args.shape or ["20000x50", "1x1000000"]]
    with bench_database(args.admin_database_url, "file-lines-") as url:
        settings = Settings(redis_url="redis://unused", database_url=url)
        results = []
        for files, lines in shapes:
            services = fakeredis_services(settings)
            try:
                results.append(run_shape(services, files, lines, args.uploads, args.repeat))
            finally:
                services.close()
    print(f"database: {url.split(':')[0]}; medians of {args.repeat} commits per case")
    print(
        "| report | finisher CPU without windows | with | ratio | storing the windows "
        "| wall without | wall with | rows | stored |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        print(
            f"| {r['shape']} | {r['without_cpu']:.2f} s | {r['with_cpu']:.2f} s "
            f"| {r['with_cpu'] / r['without_cpu']:.2f} | {r['store_cpu']:.2f} s "
            f"| {r['without_wall']:.2f} s | {r['with_wall']:.2f} s | {r['rows']:,} "
            f"| {r['stored_mib']:.1f} MiB |"
        )


if __name__ == "__main__":
    main()
