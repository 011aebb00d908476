"""What each settled version of a trickling matrix costs the finisher.

A matrix whose jobs end over a minute settles its commit at nearly every
arrival, and each settled version was a merge pass over the whole report:
decode the stored report, merge, encode, summarise, and every file's lines
re-encoded into windows. A process now keeps the report of a commit that
settles again, and re-encodes only the windows of the files the pass
touched (``app.runtime.kept_report``). This runs the real finisher
(``finish_commit``) on a fresh PostgreSQL database (or SQLite) with
fakeredis: a commit of ``--files`` files receives ``--arrivals`` uploads
one at a time, each covering a different tenth of the files (a sharded test
suite), each processed and finished (so each settles the commit), once with
the process keeping nothing between settled versions (as before) and once
as it is now, on the same uploads, and reports the finisher's CPU
(``time.process_time``) per arrival after the first two.

    python benchmarks/trickle_passes.py --files 2000 --lines 200 --arrivals 20

``--commits K --processes P``: K commits trickle at once, their arrivals
taking turns, and each finisher runs in one of P processes drawn at random
(seeded; each a ``Services`` with its own ``KeptReport``), as the finishers
of a steady arrival of matrices do on a deployment's worker processes.

    python benchmarks/trickle_passes.py --files 500 --lines 200 --arrivals 12 \
        --commits 6 --processes 2
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import statistics
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.coverage.columnar import Columns
from app.merge import file_lines
from app.runtime.kept_report import EncodedWindows, KeptReport
from app.settings import Settings
from tests.support.pipeline import Pipeline, fakeredis_services
from tests.support.services import bench_database


class KeptNothing(KeptReport):
    """The process before: no report kept once a version settles, no windows reused."""

    def take(self, commit_id: int, version: int) -> dict[str, Columns] | None:
        return None

    def windows(self, commit_id: int) -> EncodedWindows:
        return {}


def shard_lcov(job: int, files: int, lines: int) -> bytes:
    """Job ``job``'s LCOV: a tenth of the ``files`` (its shard), hits by job."""
    rng = random.Random(job)
    out = []
    for f in sorted(rng.sample(range(files), max(1, files // 10))):
        out.append(f"SF:src/pkg{f // 100}/module_{f}.py")
        out += [f"DA:{n},{(n * 7 + job) % 4}" for n in range(1, lines + 1)]
        out.append("end_of_record")
    return ("\n".join(out) + "\n").encode()


def trickle(
    processes: list[Pipeline], blobs: list[bytes], commits: int = 1, seed: int = 0
) -> tuple[list[float], int]:
    """``commits`` commits each receiving ``blobs`` one at a time, their
    arrivals taking turns, each finished in one of ``processes`` drawn at
    random: the finisher's CPU per arrival after each commit's first two,
    and the windows encoded."""
    shas = [uuid.uuid4().hex * 2 for _ in range(commits)]
    rng = random.Random(seed)
    encoded = 0
    real_encode = file_lines.encode_window

    def counting(*args: object) -> bytes:
        nonlocal encoded
        encoded += 1
        return real_encode(*args)  # type: ignore[arg-type]

    file_lines.encode_window = counting  # type: ignore[assignment]
    cpu: list[float] = []
    try:
        for i, blob in enumerate(blobs):
            for sha in shas:
                pipeline = rng.choice(processes)
                accepted = pipeline.upload([(f"u{i}.info", blob)], repo="bench/trickle", sha=sha)
                (upload_id,) = accepted.upload_ids
                pipeline.process(upload_id)
                started = time.process_time()
                outcome = pipeline.finish(accepted.repoid, accepted.commitid)
                if i >= 2:  # after the burst and the second arrival
                    cpu.append(time.process_time() - started)
                assert outcome.merged == [upload_id], outcome
    finally:
        file_lines.encode_window = real_encode
    return cpu, encoded


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--lines", type=int, default=200)
    parser.add_argument("--arrivals", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=2, help="runs per case, alternating")
    parser.add_argument("--commits", type=int, default=1, help="commits trickling at once")
    parser.add_argument("--processes", type=int, default=1, help="worker processes finishing")
    parser.add_argument(
        "--admin-database-url",
        default="postgresql+psycopg://postgres@127.0.0.1:5432/postgres",
        help="a fresh database is made on this server and dropped after; 'sqlite' for SQLite",
    )
    args = parser.parse_args()
    blobs = [shard_lcov(job, args.files, args.lines) for job in range(args.arrivals)]
    with bench_database(args.admin_database_url, "trickle-") as url:
        services = fakeredis_services(Settings(redis_url="redis://unused", database_url=url))
        cases: dict[str, list[float]] = {"before": [], "now": []}
        windows: dict[str, int] = {"before": 0, "now": 0}
        try:
            for run in range(args.repeat):
                for case in cases:
                    kept = KeptNothing if case == "before" else KeptReport
                    processes = [
                        Pipeline(dataclasses.replace(services, kept_report=kept()))
                        for _ in range(args.processes)
                    ]
                    cpu, encoded = trickle(processes, blobs, args.commits, seed=run)
                    cases[case] += cpu
                    windows[case] += encoded
        finally:
            services.close()
    print(
        f"database: {url.split(':')[0]}; {args.files:,} files x {args.lines} lines, "
        f"{args.arrivals} arrivals of a tenth of the files each, {args.commits} commit(s) "
        f"at once, {args.processes} process(es), {args.repeat} runs per case"
    )
    print("| case | finisher CPU per arrival, median | p90 | windows encoded per commit |")
    print("|---|---:|---:|---:|")
    for case, cpu in cases.items():
        p90 = statistics.quantiles(cpu, n=10)[-1]
        print(
            f"| {case} | {statistics.median(cpu) * 1000:.1f} ms | {p90 * 1000:.1f} ms "
            f"| {windows[case] // (args.repeat * args.commits):,} |"
        )
    ratio = statistics.median(cases["now"]) / statistics.median(cases["before"])
    print(f"now / before: {ratio:.2f}")


if __name__ == "__main__":
    main()
