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
  doubled (a second notification of one settled state: report version,
  uploads merged and failed);
- the cost of one upload by component: worker and ``serve`` CPU ms, Redis
  commands and bytes, PostgreSQL transactions, rows written and bytes of
  database, object-store requests and bytes, provider calls.

    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres \\
        python benchmarks/sustained_load.py --topology single|scale --rate 0.2 \\
            --duration 600 [--workers 2 --threads 8] [--serve 2] [--small] [--json out.json]

``--topology single`` runs on one private Redis (state and Dramatiq's
broker) with the payloads in PostgreSQL; ``scale`` on RabbitMQ, a 6-node
Redis Cluster (3 primaries, 3 replicas) and SeaweedFS's S3 for the payloads.
Worker CPU by actor comes from the workers' own
``covworker_actor_cpu_seconds`` (Prometheus files in the run's directory);
object-store requests and bytes from SeaweedFS's metrics.

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
from collections.abc import Callable, Iterator
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
from app.runtime.brokers import QueueInspector, queue_inspector
from app.testresults.junit import max_test_cases
from app.testresults.store import decode_test_results_payload, parse_files
from benchmarks.load.mix import MATRIX, SIZES, Mix, make_mix
from tests.support.brokers import settings_of
from tests.support.fake_github import ANY_BASE, DiffFile, FakeGitHub, FakePull
from tests.support.private_services import free_port, private_redis
from tests.support.processes import (
    covworker,
    covworker_serve,
    dramatiq_processes,
    service_env,
)
from tests.support.rabbitmq import delete_queues, require_rabbitmq
from tests.support.redis_cluster import redis_cluster
from tests.support.seaweedfs import seaweedfs_s3
from tests.support.services import delete_namespace, scratch_database

LOCUSTFILE = Path(__file__).resolve().parent / "load" / "locustfile.py"
#: Locust users: each starts a commit every ``users / rate`` seconds (longer
#: than ``--spread`` at the rates measured, so each keeps its pace).
USERS = 80
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


def redis_cpu(nodes: list[redis.Redis]) -> float:
    """CPU seconds the Redis servers used (``INFO cpu``), replicas included."""
    total = 0.0
    for node in nodes:
        cpu = node.info("cpu")
        total += float(cpu["used_cpu_sys"]) + float(cpu["used_cpu_user"])
    return total


def _server_pid(*names: str) -> int | None:
    """The oldest process whose name is one of ``names`` (a server's parent)."""
    found = [p for p in psutil.process_iter(["name", "create_time"]) if p.info["name"] in names]
    return min(found, key=lambda p: p.info["create_time"]).pid if found else None


class ServiceCpu:
    """CPU seconds of each service of a topology, read together."""

    def __init__(self, meters: dict[str, Any]) -> None:
        self.meters = meters

    def read(self) -> dict[str, float]:
        return {name: float(meter()) for name, meter in self.meters.items()}


def queue_depth(inspector: QueueInspector, queues: tuple[str, ...]) -> int:
    """Messages waiting in the run's queues (ready or stored, and delayed), whichever broker."""
    total = 0
    for queue in queues:
        found = inspector.queue_state(queue)
        total += found.stored + found.delayed
    return total


def _sampler(depth: Callable[[], int], every_s: float, stop: threading.Event, out: Samples) -> None:
    started = time.monotonic()
    while not stop.is_set():
        out.at.append(round(time.monotonic() - started, 1))
        try:
            out.depth.append(depth())
        except Exception:  # a broker blip costs one sample, not the run
            out.depth.append(out.depth[-1] if out.depth else 0)
        stop.wait(every_s)


def redis_counts(nodes: list[redis.Redis]) -> tuple[int, int]:
    """(commands processed, bytes in and out) of the servers (a cluster's
    primaries: a replica's share is the replication of the same writes)."""
    commands = traffic = 0
    for node in nodes:
        stats = node.info("stats")
        commands += int(stats["total_commands_processed"])
        traffic += int(stats["total_net_input_bytes"]) + int(stats["total_net_output_bytes"])
    return commands, traffic


def object_store_counts(metrics_url: str | None) -> tuple[int, int]:
    """(S3 requests, bytes in and out) SeaweedFS's S3 gateway counted; (0, 0) with no store."""
    if metrics_url is None:
        return 0, 0
    import httpx
    from prometheus_client.parser import text_string_to_metric_families

    requests = traffic = 0.0
    text = httpx.get(metrics_url, timeout=10).text
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "SeaweedFS_s3_request_total":
                requests += sample.value
            elif sample.name.startswith("SeaweedFS_s3_bucket_traffic_") and sample.name.endswith(
                "_bytes_total"
            ):
                traffic += sample.value
    return int(requests), int(traffic)


def _samples(directory: Path) -> Iterator[Any]:
    """Every sample of the workers' Prometheus files (app/runtime/metrics.py)."""
    from prometheus_client import CollectorRegistry
    from prometheus_client.multiprocess import MultiProcessCollector

    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=str(directory))
    for family in registry.collect():
        yield from family.samples


def actor_cpu(directory: Path) -> dict[str, float]:
    """CPU seconds by actor, read from the workers' Prometheus files
    (``covworker_actor_cpu_seconds_total``)."""
    found: dict[str, float] = {}
    for sample in _samples(directory):
        if sample.name == "covworker_actor_cpu_seconds_total":
            actor = sample.labels["actor"]
            found[actor] = found.get(actor, 0.0) + sample.value
    return found


def slow_parses(directory: Path) -> dict[str, list[int]]:
    """Per format, the uploads parsed and how many of those parses took over
    1 s and over 5 s of the worker's wall clock (``covworker_parse_seconds``):
    a parse slowed by the rest of its process, where the commit's wait is
    its parse and not its place in the queue."""
    found: dict[str, list[float]] = {}
    for sample in _samples(directory):
        if not sample.name.startswith("covworker_parse_seconds"):
            continue
        row = found.setdefault(sample.labels["format"], [0.0, 0.0, 0.0])
        if sample.name.endswith("_count"):
            row[0] += sample.value
        elif sample.name.endswith("_bucket") and sample.labels["le"] in ("1.0", "5.0"):
            row[1 if sample.labels["le"] == "1.0" else 2] += sample.value
    return {
        fmt: [int(n), int(n - within_1), int(n - within_5)]
        for fmt, (n, within_1, within_5) in sorted(found.items())
        if n
    }


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
    payloads weighted as the run sends them: coverage read into its
    intermediate report (``payload_intermediate``), test results decoded
    and parsed into their cases. The worker's floor: what it cannot avoid."""
    limits = ParseLimits()
    kinds = {"coverage": 1 - mix.test_results_share, "test_results": mix.test_results_share}
    totals = {kind: sum(p.weight for p in mix.payloads if p.kind == kind) for kind in kinds}
    seconds = raw = 0.0
    for payload in mix.payloads:
        body = Path(payload.path).read_bytes()
        start = time.process_time()
        if payload.kind == "coverage":
            payload_intermediate(body, limits)
        else:
            files = decode_test_results_payload(body, limits.for_input(len(body)).max_bytes)
            parse_files(files, max_test_cases(len(body)))
        took = time.process_time() - start
        share = payload.weight / totals[payload.kind] * kinds[payload.kind]
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
    lags, lost, doubled, errors, settled_states = [], 0, 0, 0, 0
    prepares: dict[str, int] = {}
    by_matrix: dict[int, list[float]] = {}
    failures: dict[str, int] = {}
    prepare_failures: dict[str, int] = {}
    phases: dict[str, list[float]] = {"processed": [], "merged": []}
    detail: list[list[float]] = []
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
                if states.get("error"):
                    for (reason,) in conn.execute(
                        sa.text(
                            "SELECT error FROM uploads WHERE commit_id = :c AND state = 'error'"
                        ),
                        {"c": found},
                    ):
                        key = str(reason)[:120]
                        failures[key] = failures.get(key, 0) + 1
                lost += max(0, commit["uploaded"] - done)
                notes = conn.execute(
                    sa.text(
                        "SELECT report_version, uploads_merged, uploads_errored, created_at "
                        "FROM notifications "
                        "WHERE commit_id = :c ORDER BY created_at"
                    ),
                    {"c": found},
                ).all()
                settled = [tuple(n[:3]) for n in notes]  # a settled state: I6's unique key
                doubled += len(settled) - len(set(settled))
                settled_states += len(settled)
                for state, n in conn.execute(
                    sa.text(
                        "SELECT state, count(*) FROM pull_deliveries "
                        "WHERE commit_id = :c AND target = 'prepare' GROUP BY state"
                    ),
                    {"c": found},
                ):
                    prepares[str(state)] = prepares.get(str(state), 0) + int(n)
                for (reason,) in conn.execute(
                    sa.text(
                        "SELECT error FROM pull_deliveries WHERE commit_id = :c "
                        "AND target = 'prepare' AND state = 'failed'"
                    ),
                    {"c": found},
                ):
                    key = str(reason)[:120]
                    prepare_failures[key] = prepare_failures.get(key, 0) + 1
                if notes and commit["last_put"]:
                    last = notes[-1][3]
                    lag = max(0.0, last.timestamp() - commit["last_put"])
                    lags.append(lag)
                    processed, merged = conn.execute(
                        sa.text(
                            "SELECT max(processed_at), max(merged_at) FROM uploads "
                            "WHERE commit_id = :c AND state = 'merged'"
                        ),
                        {"c": found},
                    ).one()
                    last_parsed = conn.execute(
                        sa.text(
                            "SELECT raw_size, report_format FROM uploads "
                            "WHERE commit_id = :c AND state = 'merged' "
                            "ORDER BY processed_at DESC LIMIT 1"
                        ),
                        {"c": found},
                    ).first()
                    if processed is not None and merged is not None:
                        put = commit["last_put"]
                        parsed_after = max(0.0, processed.timestamp() - put)
                        merged_after = max(0.0, merged.timestamp() - put)
                        phases["processed"].append(parsed_after)
                        phases["merged"].append(merged_after)
                        detail.append(
                            [
                                round(commit["started"], 1),
                                commit["jobs"],
                                round(parsed_after, 2),
                                round(merged_after, 2),
                                round(lag, 2),
                                round((last_parsed[0] or 0) / 1e3) if last_parsed else None,
                                last_parsed[1] if last_parsed else None,
                            ]
                        )
                    by_matrix.setdefault(commit["jobs"], []).append(lag)
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
        #: The last upload processed, and merged, after the last upload was answered.
        "phases_p50_p95_s": {
            name: [percentile(found, 0.50), percentile(found, 0.95)]
            for name, found in phases.items()
        },
        "notify_p95_s_by_matrix": {
            str(jobs): {"commits": len(found), "p95_s": percentile(found, 0.95)}
            for jobs, found in sorted(by_matrix.items())
        },
        "failures": failures,
        #: Settled states notified, and the pull-request preparations by how they ended.
        "settled_states": settled_states,
        "prepares": prepares,
        "prepare_failures": prepare_failures,
        #: Each notified commit: started, jobs, last processed, merged, notified (s),
        #: and its last parsed upload's raw KB and format.
        "commits_detail": sorted(detail),
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
    if fake is not None:
        # Every comparison of a repository (a pull request's, one with a base
        # settled during the run, a push to main): one file's three new lines.
        files: list[DiffFile] = [
            ("src/module0/file0.py", "modified", "@@ -0,0 +1,3 @@\n+a\n+b\n+c\n")
        ]
        for repo in repos:
            fake.add_diff(repo["name"], ANY_BASE, ANY_BASE, files)
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


@dataclass
class Topology:
    """Where a run's services are: what its processes are told, and what the
    benchmark reads of them."""

    describe: str
    env: dict[str, str]
    redis_nodes: list[redis.Redis]
    inspector: QueueInspector
    queues: tuple[str, ...]
    services_cpu: ServiceCpu
    store_metrics: str | None = None


@contextmanager
def topology(
    args: argparse.Namespace, work: Path, db_url: str, fake: FakeGitHub
) -> Iterator[Topology]:
    """``single``: one private Redis (state and broker), PostgreSQL, payloads in
    PostgreSQL. ``scale``: RabbitMQ, a 6-node Redis Cluster (3 primaries, 3
    replicas), SeaweedFS for the payloads, PostgreSQL."""
    namespace = f"load-{random.getrandbits(32):08x}"
    processes = (
        f"{args.serve} serve processes, {args.workers} worker processes x {args.threads} threads"
    )
    prometheus = {  # the workers' metrics files: CPU by actor (app/runtime/metrics.py)
        "COVWORKER_METRICS": "true",
        "dramatiq_prom_db": str(work / "prometheus"),
        "dramatiq_prom_port": str(free_port()),
    }
    (work / "prometheus").mkdir()
    postgres = _server_pid("postgres")
    postgres_cpu = CpuMeter(postgres).read if postgres is not None else (lambda: 0.0)
    common = {
        "COVWORKER_UPLOAD_URL_SECRET": f"{random.getrandbits(128):032x}",
        "COVWORKER_GITHUB_TOKEN": "load-token",
        "COVWORKER_GITHUB_API_URL": fake.url,
        "COVWORKER_PUBLIC_URL": "",
        **prometheus,
        **dict(setting.split("=", 1) for setting in args.setting),
    }
    with ExitStack() as stack:
        if args.topology == "single":
            server = stack.enter_context(private_redis(work / "redis"))
            env = service_env(server.url, db_url, namespace, **common)
            client = server.client()
            stack.callback(client.close)
            stack.callback(delete_namespace, server.url, namespace)
            yield Topology(
                describe=f"single: one Redis, PostgreSQL, payloads in PostgreSQL; {processes}",
                env=env,
                redis_nodes=[client],
                inspector=queue_inspector(settings_of(env), client),
                queues=settings_of(env).queue_names,
                services_cpu=ServiceCpu(
                    {"redis": lambda: redis_cpu([client]), "postgres": postgres_cpu}
                ),
            )
            return
        rabbitmq = require_rabbitmq()
        cluster = stack.enter_context(redis_cluster())
        store = stack.enter_context(seaweedfs_s3(work / "s3", metrics_port=free_port()))
        env = service_env(
            cluster.url, db_url, namespace,
            COVWORKER_BROKER_URL=rabbitmq, COVWORKER_QUEUE_NAME=namespace,
            COVWORKER_REDIS_CLUSTER="true", **store.env(), **common,
        )  # fmt: skip
        settings = settings_of(env)
        stack.callback(delete_queues, settings.queue_names, rabbitmq)
        nodes = [cluster.node(port) for port in cluster.primaries()]
        every_node = [cluster.node(port) for port in cluster.ports]
        rabbit_pid = _server_pid("beam.smp")
        assert store.process is not None
        inspector = queue_inspector(settings, None)
        stack.callback(inspector.close)
        yield Topology(
            describe="scale: RabbitMQ, Redis Cluster of 6 (3 primaries), SeaweedFS S3, "
            f"PostgreSQL; {processes}",
            env=env,
            redis_nodes=nodes,
            inspector=inspector,
            queues=settings.queue_names,
            services_cpu=ServiceCpu(
                {
                    "redis": lambda: redis_cpu(every_node),
                    "postgres": postgres_cpu,
                    "rabbitmq": CpuMeter(rabbit_pid).read if rabbit_pid else (lambda: 0.0),
                    "seaweedfs": CpuMeter(store.process.pid).read,
                }
            ),
            store_metrics=f"http://127.0.0.1:{store.metrics_port}/metrics",
        )


def _readings(
    where: Topology, worker_cpu: CpuMeter, serve_cpu: CpuMeter, db_url: str
) -> dict[str, Any]:
    return {
        "worker_cpu": worker_cpu.read(),
        "serve_cpu": serve_cpu.read(),
        "redis": redis_counts(where.redis_nodes),
        "postgres": postgres_counts(db_url),
        "store": object_store_counts(where.store_metrics),
        "services_cpu": where.services_cpu.read(),
        "load_generator_cpu": _children_cpu(),
        "at": time.monotonic(),
    }


def booted(*meters: CpuMeter, quiet: float = 0.1, most_s: float = 60.0) -> None:
    """Wait until the processes have booted: two seconds in which they used
    less than ``quiet`` of a core (imports and start-up are not idle cost)."""
    deadline = time.monotonic() + most_s
    last = sum(m.read() for m in meters)
    while time.monotonic() < deadline:
        time.sleep(2)
        now = sum(m.read() for m in meters)
        if now - last < 2 * quiet:
            return
        last = now


def _children_cpu() -> float:
    """CPU seconds of this process's waited-for children (Locust, once it ended)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    kept = args.payloads / "mix.json" if args.payloads else None
    if kept is not None and kept.exists():  # the payloads of an earlier run, reused
        mix, mix_path = Mix.load(kept), kept
    else:
        mix = make_mix(
            args.payloads or work / "payloads",
            sizes=SMALL_SIZES if args.small else SIZES,
            matrix=SMALL_MATRIX if args.small else MATRIX,
            variants=1 if args.small else 2,
        )
        mix_path = kept or work / "mix.json"
        mix.save(mix_path)
    admin = args.admin_database_url
    with ExitStack() as stack:
        db_url = stack.enter_context(scratch_database(admin, "covworker_load_"))
        fake = stack.enter_context(fake_github())
        where = stack.enter_context(topology(args, work, db_url, fake))
        env = where.env
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
        worker_cpu, serve_cpu = CpuMeter(workers.pid), CpuMeter(served.pid)
        booted(worker_cpu, serve_cpu)
        idle_from = _readings(where, worker_cpu, serve_cpu, db_url)
        time.sleep(args.idle)  # what every process costs with nothing to do
        before = _readings(where, worker_cpu, serve_cpu, db_url)
        actors_before = actor_cpu(work / "prometheus")
        samples, stop = Samples(), threading.Event()
        sampler = threading.Thread(
            target=_sampler,
            args=(lambda: queue_depth(where.inspector, where.queues), args.sample, stop, samples),
            daemon=True,
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
            COVWORKER_LOAD_SPREAD=str(args.spread),
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
        after = _readings(where, worker_cpu, serve_cpu, db_url)
        actors = {
            name: spent - actors_before.get(name, 0.0)
            for name, spent in actor_cpu(work / "prometheus").items()
        }
        result = outcome(db_url, log) if log.exists() else {"commits": 0, "uploads_answered": 0}
        #: Per format: uploads parsed, parses over 1 s, over 5 s (worker wall clock).
        result["parses_over_1s_5s"] = slow_parses(work / "prometheus")
        provider_calls = len(fake.calls())
    return report(args, mix, where, result, idle_from, before, after, actors, provider_calls,
                  samples, sent_s, drain_s, locust)  # fmt: skip


def report(
    args: argparse.Namespace,
    mix: Mix,
    where: Topology,
    result: dict[str, Any],
    idle_from: dict[str, Any],
    before: dict[str, Any],
    after: dict[str, Any],
    actors: dict[str, float],
    provider_calls: int,
    samples: Samples,
    sent_s: float,
    drain_s: float,
    locust: subprocess.CompletedProcess[str],
) -> dict[str, Any]:
    uploads = max(1, result["uploads_answered"])
    worker_s = after["worker_cpu"] - before["worker_cpu"]
    floor = parse_floor(mix)
    per_core = uploads / worker_s if worker_s else 0.0
    third = max(1, len(samples.depth) // 3)

    def per_upload(key: str, index: int | None = None, scale: float = 1.0) -> float:
        if index is None:
            spent = after[key] - before[key]
        else:
            spent = after[key][index] - before[key][index]
        return round(spent / uploads / scale, 2)

    idle_s = before["at"] - idle_from["at"]
    window_s = after["at"] - before["at"]

    def idle_cores(spent_before: float, spent_idle_from: float) -> float:
        return round((spent_before - spent_idle_from) / idle_s, 4)

    idle_rates = {
        "redis_commands_per_s": round((before["redis"][0] - idle_from["redis"][0]) / idle_s, 1),
        "postgres_transactions_per_s": round(
            (before["postgres"]["transactions"] - idle_from["postgres"]["transactions"]) / idle_s,
            2,
        ),
    }
    idle = {
        "worker": idle_cores(before["worker_cpu"], idle_from["worker_cpu"]),
        "serve": idle_cores(before["serve_cpu"], idle_from["serve_cpu"]),
        **{
            name: idle_cores(before["services_cpu"][name], idle_from["services_cpu"][name])
            for name in before["services_cpu"]
        },
    }
    busy = {
        "worker": round(worker_s / window_s, 4),
        "serve": round((after["serve_cpu"] - before["serve_cpu"]) / window_s, 4),
        **{
            name: round((after["services_cpu"][name] - before["services_cpu"][name]) / window_s, 4)
            for name in before["services_cpu"]
        },
        "load_generator": round(
            (after["load_generator_cpu"] - before["load_generator_cpu"]) / window_s, 4
        ),
    }

    def pg(key: str, scale: float = 1.0) -> float:
        return round((after["postgres"][key] - before["postgres"][key]) / uploads / scale, 2)

    return {
        "topology": args.topology,
        "rate_commits_s": args.rate,
        "duration_s": args.duration,
        "spread_s": args.spread,
        "sent_s": round(sent_s, 1),
        "drain_s": round(drain_s, 1),
        "settings": args.setting,
        "where": where.describe,
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
            "worker_cpu_ms": per_upload("worker_cpu", scale=1e-3),
            "worker_cpu_ms_by_actor": {
                name: round(spent / uploads * 1000, 2) for name, spent in sorted(actors.items())
            },
            "serve_cpu_ms": per_upload("serve_cpu", scale=1e-3),
            "redis_commands": per_upload("redis", 0),
            "redis_kb": per_upload("redis", 1, scale=1e3),
            "postgres_transactions": pg("transactions"),
            "postgres_rows_written": pg("rows_written"),
            "postgres_kb": pg("database_bytes", scale=1e3),
            "object_store_requests": per_upload("store", 0),
            "object_store_kb": per_upload("store", 1, scale=1e3),
            "provider_calls": round(provider_calls / uploads, 2),
        },
        "window_s": round(window_s, 1),
        "idle_cores": idle,
        "idle_rates": idle_rates,
        "cores": busy,
        "service_cpu_ms_per_upload": {
            name: round(
                (after["services_cpu"][name] - before["services_cpu"][name]) / uploads * 1000, 2
            )
            for name in before["services_cpu"]
        },
        "worker_uploads_per_core_s": round(per_core, 2),
        "worker_raw_mb_per_core_s": round(per_core * mix.mean_raw_bytes() / 1e6, 2),
        "parse_floor_raw_mb_per_core_s": round(floor["raw_mb_per_core_s"], 2),
        "parse_floor_uploads_per_core_s": round(floor["uploads_per_core_s"], 2),
        "of_floor": round(per_core / floor["uploads_per_core_s"], 3),
        "queue_depth": dict(zip(samples.at, samples.depth, strict=True)),
        "locust_rc": locust.returncode,
        "locust_tail": locust.stderr[-1500:] if locust.returncode else "",
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topology", choices=("single", "scale"), default="single")
    parser.add_argument("--rate", type=float, default=0.1, help="commits per second")
    parser.add_argument("--duration", type=int, default=600, help="seconds of arrivals")
    parser.add_argument("--workers", type=int, default=2, help="worker processes")
    parser.add_argument("--threads", type=int, default=8, help="threads per worker process")
    parser.add_argument("--serve", type=int, default=2, help="covworker serve processes")
    parser.add_argument("--sample", type=float, default=5.0, help="queue sampling period (s)")
    parser.add_argument(
        "--idle", type=float, default=20.0, help="seconds of no load measured first"
    )
    parser.add_argument("--drain", type=float, default=600.0, help="most seconds to drain")
    parser.add_argument("--small", action="store_true", help="small reports and matrices")
    parser.add_argument(
        "--spread",
        type=float,
        default=60.0,
        help="seconds over which a matrix's jobs end (0: each matrix at once, a burst)",
    )
    parser.add_argument(
        "--admin-database-url",
        default=os.environ.get("DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres"),
    )
    parser.add_argument(
        "--setting",
        action="append",
        default=[],
        metavar="COVWORKER_NAME=VALUE",
        help="a setting of the serve and worker processes (again for more)",
    )
    parser.add_argument("--json", type=Path, help="also write the result here")
    parser.add_argument(
        "--payloads",
        type=Path,
        help="keep the mix's payloads here and reuse them in later runs (made once, ~1 min)",
    )
    args = parser.parse_args(argv)
    result = run(args)
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text)
    return result


if __name__ == "__main__":
    main()
