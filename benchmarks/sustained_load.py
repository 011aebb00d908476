"""Sustained load: a steady arrival of CI matrices for a set time, and what it cost.

Not a test: it measures. On a database of its own (on ``DATABASE_URL``'s
server, dropped at the end) and a private ``redis-server`` (so its command
counts are this run's only), it starts ``covworker serve`` and ``dramatiq
app.actors`` workers, a fake GitHub for the pull requests' feedback, and
Locust (``benchmarks/load/locustfile.py``) sending ``--rate`` commits per
second of the mix in ``benchmarks/load/mix.py`` for ``--duration`` seconds.
Then it waits for the pipeline to drain and reports:

- arrival and throughput: commits, uploads and raw MB per second; worker
  CPU per upload and uploads per worker core-second, against the parse-only
  floor of the same payloads measured in this process in the same run;
- the queue's depth every ``--sample`` seconds (bounded: its last third no
  deeper than its first two);
- each commit's notification after its last upload was answered (p50, p95,
  max) and the uploads lost (answered 2xx, never merged nor failed) and
  doubled (a second notification of one settled state);
- the cost of one upload by component: worker and ``serve`` CPU ms, Redis
  commands and bytes, PostgreSQL transactions, rows written and bytes of
  database, provider calls.

    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres \\
        python benchmarks/sustained_load.py --rate 0.2 --duration 600 \\
            [--workers 2 --threads 8] [--serve 2] [--small] [--json out.json]

``--small`` keeps the reports to 10 and 100 KB and the matrices to 1-12
uploads (the CI smoke run). The machine's other tenants share its cores:
figures are for the machine as it was.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import redis
import sqlalchemy as sa
from sqlalchemy.orm import Session

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.coverage.limits import ParseLimits
from app.db.repos import add_repository
from app.ingest.parse import payload_intermediate
from benchmarks.load.mix import MATRIX, SIZES, Mix, make_mix
from tests.support.fake_github import FakeGitHub, FakePull
from tests.support.private_services import private_redis
from tests.support.processes import (
    covworker,
    covworker_serve,
    dramatiq_processes,
    service_env,
)
from tests.support.services import delete_namespace, scratch_database

LOCUSTFILE = Path(__file__).resolve().parent / "load" / "locustfile.py"
#: Locust users: each starts a commit every ``users / rate`` seconds.
USERS = 40
REPOSITORIES = 20
SMALL_SIZES = ((10_000, 0.6), (100_000, 0.4))
SMALL_MATRIX = ((1, 0.4), (4, 0.4), (12, 0.2))


@dataclass
class Samples:
    at: list[float] = field(default_factory=list)
    depth: list[int] = field(default_factory=list)


def _tree(pid: int) -> list[psutil.Process]:
    try:
        parent = psutil.Process(pid)
        return [parent, *parent.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def _cpu_s(processes: dict[int, psutil.Process]) -> float:
    total = 0.0
    for proc in processes.values():
        try:
            times = proc.cpu_times()
            total += times.user + times.system
        except psutil.NoSuchProcess:
            continue
    return total


class CpuMeter:
    """CPU seconds of a process tree, its children found as they come (a
    finished child's last reading is kept)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.last: dict[int, float] = {}

    def read(self) -> float:
        for proc in _tree(self.pid):
            try:
                times = proc.cpu_times()
                self.last[proc.pid] = times.user + times.system
            except psutil.NoSuchProcess:
                continue
        return sum(self.last.values())


def queue_depth(client: redis.Redis, namespace: str) -> int:
    """Messages waiting in Dramatiq's Redis queues (ready and delayed) of the run."""
    total = 0
    for key in client.scan_iter(match=f"{namespace}-dramatiq:*", count=500):
        name = key.decode()
        kind = client.type(key)
        if kind == b"list":
            total += int(client.llen(key))
        elif kind == b"zset" and ".DQ" in name:
            total += int(client.zcard(key))
    return total


def _sampler(
    client: redis.Redis, namespace: str, every_s: float, stop: threading.Event, out: Samples
) -> None:
    started = time.monotonic()
    while not stop.is_set():
        out.at.append(round(time.monotonic() - started, 1))
        out.depth.append(queue_depth(client, namespace))
        stop.wait(every_s)


def redis_counts(client: redis.Redis) -> tuple[int, int]:
    """(commands processed, bytes in and out) of the whole server."""
    stats = client.info("stats")
    return (
        int(stats["total_commands_processed"]),
        int(stats["total_net_input_bytes"]) + int(stats["total_net_output_bytes"]),
    )


def postgres_counts(url: str) -> dict[str, int]:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            row = conn.execute(
                sa.text(
                    "SELECT xact_commit, tup_inserted, tup_updated, tup_deleted, "
                    "pg_database_size(current_database()) FROM pg_stat_database "
                    "WHERE datname = current_database()"
                )
            ).one()
    finally:
        engine.dispose()
    return {
        "transactions": int(row[0]),
        "rows_written": int(row[1]) + int(row[2]) + int(row[3]),
        "database_bytes": int(row[4]),
    }


def parse_floor(mix: Mix) -> dict[str, float]:
    """Uploads and raw MB parsed per CPU second, on one core, for the mix's
    coverage payloads weighted as the run sends them: the worker's floor."""
    limits = ParseLimits()
    weights = {p.path: p.weight for p in mix.payloads if p.kind == "coverage"}
    seconds = raw = 0.0
    total = sum(weights.values())
    for payload in (p for p in mix.payloads if p.kind == "coverage"):
        body = Path(payload.path).read_bytes()
        start = time.process_time()
        payload_intermediate(body, limits)
        took = time.process_time() - start
        share = payload.weight / total
        seconds += took * share
        raw += payload.raw_bytes * share
    return {"uploads_per_core_s": 1 / seconds, "raw_mb_per_core_s": raw / seconds / 1e6}


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)]


def settle(url: str, deadline_s: float) -> float:
    """Seconds until no upload is pending (uploaded, processing, processed)."""
    engine = sa.create_engine(url)
    started = time.monotonic()
    try:
        while time.monotonic() - started < deadline_s:
            with engine.connect() as conn:
                pending = conn.scalar(
                    sa.text(
                        "SELECT count(*) FROM uploads "
                        "WHERE state IN ('uploaded', 'processing', 'processed')"
                    )
                )
            if not pending:
                return time.monotonic() - started
            time.sleep(1)
    finally:
        engine.dispose()
    return float("inf")


def outcome(url: str, log: Path) -> dict[str, Any]:
    """What became of every commit Locust sent: lost, doubled, notification lag."""
    sent = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    engine = sa.create_engine(url)
    lags, lost, doubled, errors = [], 0, 0, 0
    try:
        with engine.connect() as conn:
            for commit in sent:
                found = conn.execute(
                    sa.text(
                        "SELECT c.id FROM commits c JOIN repositories r ON r.id = c.repository_id "
                        "WHERE r.name = :repo AND c.sha = :sha"
                    ),
                    {"repo": commit["repo"], "sha": commit["sha"]},
                ).scalar()
                if found is None:
                    lost += commit["uploaded"]
                    continue
                states = dict(
                    conn.execute(
                        sa.text(
                            "SELECT state, count(*) FROM uploads WHERE commit_id = :c "
                            "AND state <> 'awaiting' GROUP BY state"
                        ),
                        {"c": found},
                    ).all()
                )
                done = int(states.get("merged", 0)) + int(states.get("error", 0))
                errors += int(states.get("error", 0))
                lost += max(0, commit["uploaded"] - done)
                notes = conn.execute(
                    sa.text(
                        "SELECT report_version, created_at FROM notifications "
                        "WHERE commit_id = :c ORDER BY created_at"
                    ),
                    {"c": found},
                ).all()
                versions = [n[0] for n in notes]
                doubled += len(versions) - len(set(versions))
                if notes and commit["last_put"]:
                    last = notes[-1][1]
                    lags.append(max(0.0, last.timestamp() - commit["last_put"]))
    finally:
        engine.dispose()
    return {
        "commits": len(sent),
        "uploads_answered": sum(c["uploaded"] for c in sent),
        "lost": lost,
        "doubled": doubled,
        "failed": errors,
        "notify_p50_s": percentile(lags, 0.50),
        "notify_p95_s": percentile(lags, 0.95),
        "notify_max_s": max(lags, default=None),
    }


def add_repositories(url: str, n: int) -> list[dict[str, str]]:
    """``n`` repositories with their upload tokens, as ``covworker repo add`` makes them."""
    engine = sa.create_engine(url)
    try:
        with Session(engine) as session, session.begin():
            issued = [add_repository(session, f"load/repo{i:02}") for i in range(n)]
    finally:
        engine.dispose()
    return [{"name": i.repository, "token": i.token} for i in issued]


def plan(directory: Path, repos: list[dict[str, str]], pulls: int, fake: FakeGitHub | None) -> Path:
    """The repositories and tokens, and pull requests the fake GitHub knows."""
    rng = random.Random(11)
    entries = []
    for number in range(1, pulls + 1):
        repo = rng.choice(repos)
        head, base = f"{rng.getrandbits(160):040x}", f"{rng.getrandbits(160):040x}"
        entries.append({"repo": repo["name"], "sha": head, "number": number})
        if fake is not None:
            fake.add_pull(repo["name"], FakePull(number, base, "main", head, "feature"))
            patch = "@@ -0,0 +1,3 @@\n+a\n+b\n+c\n"
            fake.add_diff(repo["name"], base, head, [("src/module0/file0.py", "modified", patch)])
    path = directory / "plan.json"
    path.write_text(json.dumps({"repos": repos, "pulls": entries}))
    return path


@contextmanager
def fake_github() -> Iterator[FakeGitHub]:
    fake = FakeGitHub().start()
    try:
        yield fake
    finally:
        fake.stop()


def run(args: argparse.Namespace) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="covworker-load-"))
    try:
        return _run(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _run(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    mix = make_mix(
        work / "payloads",
        sizes=SMALL_SIZES if args.small else SIZES,
        matrix=SMALL_MATRIX if args.small else MATRIX,
        variants=1 if args.small else 2,
    )
    mix_path = work / "mix.json"
    mix.save(mix_path)
    admin = args.admin_database_url
    with ExitStack() as stack:
        db_url = stack.enter_context(scratch_database(admin, "covworker_load_"))
        server = stack.enter_context(private_redis(work / "redis"))
        fake = stack.enter_context(fake_github())
        namespace = f"load-{random.getrandbits(32):08x}"
        env = service_env(
            server.url, db_url, namespace,
            COVWORKER_UPLOAD_URL_SECRET=f"{random.getrandbits(128):032x}",
            COVWORKER_GITHUB_TOKEN="load-token", COVWORKER_GITHUB_API_URL=fake.url,
            COVWORKER_PUBLIC_URL="",
        )  # fmt: skip
        upgraded = covworker(env, "db", "upgrade")
        assert upgraded.returncode == 0, upgraded.stderr
        repos = add_repositories(db_url, REPOSITORIES)
        expected_commits = args.rate * args.duration
        plan_path = plan(work, repos, int(expected_commits * mix.pull_share * 2) + 5, fake)
        served = stack.enter_context(covworker_serve(env, work / "serve.log", workers=args.serve))
        workers = stack.enter_context(
            dramatiq_processes(
                "app.actors", env, work / "worker.log",
                processes=args.workers, threads=args.threads,
            )
        )  # fmt: skip
        client = server.client()
        worker_cpu, serve_cpu = CpuMeter(workers.pid), CpuMeter(served.pid)
        time.sleep(2)  # the workers boot
        before = {
            "worker_cpu": worker_cpu.read(),
            "serve_cpu": serve_cpu.read(),
            "redis": redis_counts(client),
            "postgres": postgres_counts(db_url),
        }
        samples, stop = Samples(), threading.Event()
        sampler = threading.Thread(
            target=_sampler, args=(client, namespace, args.sample, stop, samples), daemon=True
        )
        sampler.start()
        log = work / "commits.jsonl"
        users = max(1, min(USERS, math.ceil(args.rate * args.duration)))
        locust_env = dict(
            os.environ,
            COVWORKER_LOAD_MIX=str(mix_path),
            COVWORKER_LOAD_PLAN=str(plan_path),
            COVWORKER_LOAD_RATE=str(args.rate / users),
            COVWORKER_LOAD_LOG=str(log),
        )
        started = time.monotonic()
        locust = subprocess.run(
            [sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--headless",
             "-u", str(users), "-r", str(max(args.rate, 0.01)), "-t", f"{args.duration}s",
             "--stop-timeout", "300", "--host", served.url, "--only-summary",
             "--csv", str(work / "locust"), "--loglevel", "WARNING"],
            env=locust_env, capture_output=True, text=True, check=False,
        )  # fmt: skip
        sent_s = time.monotonic() - started
        drain_s = settle(db_url, args.drain)
        stop.set()
        sampler.join()
        after = {
            "worker_cpu": worker_cpu.read(),
            "serve_cpu": serve_cpu.read(),
            "redis": redis_counts(client),
            "postgres": postgres_counts(db_url),
        }
        result = outcome(db_url, log) if log.exists() else {"commits": 0, "uploads_answered": 0}
        provider_calls = len(fake.calls())
        client.close()
        delete_namespace(server.url, namespace)
    uploads = max(1, result["uploads_answered"])
    worker_s = after["worker_cpu"] - before["worker_cpu"]
    floor = parse_floor(mix)
    per_core = uploads / worker_s if worker_s else 0.0
    third = max(1, len(samples.depth) // 3)
    return {
        "rate_commits_s": args.rate,
        "duration_s": args.duration,
        "sent_s": round(sent_s, 1),
        "drain_s": round(drain_s, 1),
        "topology": f"single: serve x{args.serve}, {args.workers} worker processes x "
        f"{args.threads} threads, one Redis, one PostgreSQL",
        "mix": {
            "mean_uploads_per_commit": round(mix.mean_uploads_per_commit(), 1),
            "mean_raw_kb": round(mix.mean_raw_bytes() / 1e3, 1),
        },
        **result,
        "uploads_per_s": round(result["uploads_answered"] / sent_s, 2),
        "raw_mb_per_s": round(result["uploads_answered"] * mix.mean_raw_bytes() / sent_s / 1e6, 2),
        "queue_depth_max": max(samples.depth, default=0),
        "queue_depth_bounded": max(samples.depth[-third:], default=0)
        <= max(samples.depth[:-third] or [0]) + 10,
        "per_upload": {
            "worker_cpu_ms": round(worker_s / uploads * 1000, 1),
            "serve_cpu_ms": round((after["serve_cpu"] - before["serve_cpu"]) / uploads * 1000, 1),
            "redis_commands": round((after["redis"][0] - before["redis"][0]) / uploads, 1),
            "redis_kb": round((after["redis"][1] - before["redis"][1]) / uploads / 1e3, 1),
            "postgres_transactions": round(
                (after["postgres"]["transactions"] - before["postgres"]["transactions"]) / uploads,
                1,
            ),
            "postgres_rows_written": round(
                (after["postgres"]["rows_written"] - before["postgres"]["rows_written"]) / uploads,
                1,
            ),
            "postgres_kb": round(
                (after["postgres"]["database_bytes"] - before["postgres"]["database_bytes"])
                / uploads
                / 1e3,
                1,
            ),
            "provider_calls": round(provider_calls / uploads, 2),
        },
        "worker_uploads_per_core_s": round(per_core, 2),
        "parse_floor_uploads_per_core_s": round(floor["uploads_per_core_s"], 2),
        "of_floor": round(per_core / floor["uploads_per_core_s"], 3),
        "queue_depth": dict(zip(samples.at, samples.depth, strict=True)),
        "locust_rc": locust.returncode,
        "locust_tail": locust.stderr[-1500:] if locust.returncode else "",
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=0.1, help="commits per second")
    parser.add_argument("--duration", type=int, default=600, help="seconds of arrivals")
    parser.add_argument("--workers", type=int, default=2, help="worker processes")
    parser.add_argument("--threads", type=int, default=8, help="threads per worker process")
    parser.add_argument("--serve", type=int, default=2, help="covworker serve processes")
    parser.add_argument("--sample", type=float, default=5.0, help="queue sampling period (s)")
    parser.add_argument("--drain", type=float, default=600.0, help="most seconds to drain")
    parser.add_argument("--small", action="store_true", help="small reports and matrices")
    parser.add_argument(
        "--admin-database-url",
        default=os.environ.get("DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres"),
    )
    parser.add_argument("--json", type=Path, help="also write the result here")
    args = parser.parse_args(argv)
    result = run(args)
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text)
    return result


if __name__ == "__main__":
    main()
