"""One strategy, one scenario: fresh database and namespace, real workers, collect, clean up.

Nothing here is shared with other programs on the same servers: the
database is created for the run and dropped after it, and only keys under
the run's own namespace are deleted (SCAN + DEL, never FLUSHALL).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import time
import tracemalloc
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis
import sqlalchemy as sa
from dramatiq.errors import QueueJoinTimeout
from sqlalchemy.engine import make_url

from app.coverage import codec
from app.db.migrate import upgrade
from app.db.models import PENDING_STATES, CommitReport, Upload, UploadState
from app.pipeline.finisher import merge_pass
from app.runtime.brokers import inspector_of, join_queues, make_broker
from app.runtime.services import Services
from app.settings import Settings, normalise_database_url
from benchmarks.stampede.collect import RunFacts, commit_facts
from benchmarks.stampede.config import BenchKnobs
from benchmarks.stampede.instrument import BenchKeys
from benchmarks.stampede.scenarios import (
    Shape,
    accept,
    coalescing_sender,
    drive,
    process_in_driver,
)
from benchmarks.stampede.strategies import BASELINE_FINISHER
from tests.support.processes import dramatiq_processes
from tests.support.rabbitmq import delete_queues
from tests.support.redis_commands import CommandCounter, counting_client

#: Seconds the worker processes get to start and report ready.
BOOT_TIMEOUT_S = 120
#: How often the driver looks at the queue while waiting to settle, ms.
JOIN_INTERVAL_MS = 20

Phase = Callable[[str], None]
Progress = Callable[[int], None]


@dataclass(frozen=True)
class RunPlan:
    scenario: str
    uploads: int
    commits: int
    processes: int
    threads: int
    time_scale: float
    limit: int
    max_retries: int
    lock_wait_s: float
    deadline_s: float
    spread_s: float
    #: The driver's settings, read once: servers, and the values the scale applies to.
    settings: Settings
    log_dir: Path
    shape: Shape = field(default_factory=Shape)
    #: RabbitMQ of the strategies labelled ``<strategy>@rabbitmq``.
    rabbitmq_url: str = "amqp://guest:guest@127.0.0.1:5672/%2F"
    #: Of ``processes``, how many consume only the finisher queue (0: all
    #: consume every queue).
    finisher_processes: int = 0

    @property
    def redis_url(self) -> str:
        return self.settings.redis_url

    def knobs(self, strategy: str) -> BenchKnobs:
        return BenchKnobs(strategy, self.time_scale, self.limit, self.max_retries, self.lock_wait_s)


@contextmanager
def fresh_environment(plan: RunPlan, label: str) -> Iterator[tuple[str, str]]:
    """(database URL, namespace) of the run's own; dropped and deleted afterwards."""
    token = uuid.uuid4().hex[:10]
    namespace = f"cwbench-{token}-{label}"
    server = make_url(normalise_database_url(plan.settings.database_url))
    db_url = server.set(database=f"covworker_bench_{token}").render_as_string(hide_password=False)
    try:
        upgrade(db_url)
        yield db_url, namespace
    finally:
        admin = sa.create_engine(server.set(database="postgres"), isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "covworker_bench_{token}" WITH (FORCE)'))
        admin.dispose()
        client = redis.Redis.from_url(plan.redis_url)
        for key in client.scan_iter(match=f"{namespace}*", count=1000):
            client.delete(key)  # the run's own keys only
        client.close()


@dataclass(frozen=True)
class WorkerGroups:
    """The run's ``dramatiq`` commands: one, or the parsers' and the finishers'."""

    procs: tuple[subprocess.Popen[bytes], ...]

    def poll(self) -> int | None:
        """An exit code once any of them has stopped, else None."""
        return next((code for p in self.procs if (code := p.poll()) is not None), None)


@contextmanager
def workers(
    env: dict[str, str], plan: RunPlan, log: Path, settings: Settings
) -> Iterator[WorkerGroups]:
    """``plan.processes`` worker processes. With ``plan.finisher_processes``,
    that many consume only the finisher queue and the rest every other queue
    (a merge pass never shares a process, nor its GIL, with a parse);
    otherwise each consumes every queue."""
    module, threads = "benchmarks.stampede.worker", plan.threads
    if not plan.finisher_processes:
        with dramatiq_processes(module, env, log, processes=plan.processes, threads=threads) as p:
            yield WorkerGroups((p,))
        return
    finisher = settings.finisher_queue_name
    others = [q for q in settings.queue_names if q != finisher]
    parsers = plan.processes - plan.finisher_processes
    with (
        dramatiq_processes(
            module, env, log, processes=parsers, threads=threads, queues=others
        ) as parsing,
        dramatiq_processes(
            module,
            env,
            log.with_suffix(".finish.log"),
            processes=plan.finisher_processes,
            threads=threads,
            queues=[finisher],
        ) as finishing,
    ):
        yield WorkerGroups((parsing, finishing))


def wait_ready(client: redis.Redis, keys: BenchKeys, processes: int, proc: Any, log: Path) -> None:
    ready = 0
    deadline = time.monotonic() + BOOT_TIMEOUT_S
    while ready < processes:
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"bench workers did not start; see {log}")
        if client.blpop([keys.ready], timeout=1):
            ready += 1


def worker_env(
    plan: RunPlan, strategy: str, db_url: str, namespace: str, settings: Settings | None = None
) -> dict[str, str]:
    """The caller's environment (its ``COVWORKER_*`` settings too), with the run's
    database, namespace and broker, and every timeout and countdown scaled."""
    settings = settings or plan.settings
    env = dict(os.environ)
    env.update(REDIS_URL=plan.redis_url, DATABASE_URL=db_url, COVWORKER_NAMESPACE=namespace)
    env.update(PYTHONUNBUFFERED="1")
    # As the image runs workers (Dockerfile), unless the caller chose otherwise.
    env.setdefault("MALLOC_ARENA_MAX", "1")
    if settings.broker_kind == "rabbitmq":
        env.update(COVWORKER_BROKER_URL=settings.broker_url, COVWORKER_QUEUE_NAME=namespace)
    # The bench worker is in this checkout, not the installed package.
    checkout = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [checkout, env.get("PYTHONPATH")]))
    env.update(plan.knobs(strategy).worker_env(settings))
    return env


def run_settings(plan: RunPlan, db_url: str, namespace: str, broker: str) -> Settings:
    """The run's settings: its database and namespace; on RabbitMQ, queues of its own."""
    update: dict[str, Any] = {"database_url": db_url, "namespace": namespace}
    if broker == "rabbitmq":
        update.update(
            broker_url=plan.rabbitmq_url,
            queue_name=namespace,
            finisher_queue_name=f"{namespace}.finish",
        )
    return plan.settings.model_copy(update=update)


def run_strategy(plan: RunPlan, label: str, phase: Phase, progress: Progress) -> RunFacts:
    """Run ``plan.scenario`` once with the strategy ``label`` names
    (``<strategy>[@rabbitmq]``); the raw facts for the figures."""
    strategy, _, broker = label.partition("@")
    with fresh_environment(plan, strategy) as (db_url, namespace):
        keys = BenchKeys.under(namespace)
        plain = redis.Redis.from_url(plan.redis_url)
        counter = CommandCounter()
        settings = run_settings(plan, db_url, namespace, broker or "redis")
        services = Services.from_settings(
            settings, redis_client=counting_client(plan.redis_url, counter)
        )
        sender = make_broker(settings, services.redis, middleware=[])
        watcher = make_broker(settings, plain, middleware=[])
        inspector = inspector_of(watcher)
        log = plan.log_dir / f"{plan.scenario}-{label.replace('@', '-')}.log"
        try:
            phase("starting workers")
            env = worker_env(plan, strategy, db_url, namespace, settings)
            with workers(env, plan, log, settings) as proc:
                wait_ready(plain, keys, plan.processes, proc, log)
                driven = drive(
                    plan.scenario,
                    services,
                    sender,
                    finisher="upload_finisher"
                    if strategy.startswith("covworker")
                    else BASELINE_FINISHER,
                    commits=plan.commits,
                    uploads=plan.uploads,
                    spread_s=plan.spread_s,
                    phase=phase,
                    shape=plan.shape,
                    send_finisher=coalescing_sender(
                        make_broker(settings, services.redis, middleware=[]),
                        services.redis,
                        settings,
                        debounce_ms=int(env["COVWORKER_FINISHER_DEBOUNCE_MS"]),
                    )
                    if strategy.startswith("covworker")
                    else None,
                )
                drained = settle(watcher, services, driven.started + plan.deadline_s, progress)
                settled_at = drained if drained is not None else time.time()
                dead = sum(inspector.queue_state(q).dead for q in settings.queue_names)
                phase("stopping workers")
            # The workers write what they recorded as they shut down.
            phase("collecting")
            flushed = plain.hgetall(keys.commands)
            if len(flushed) != plan.processes:
                raise RuntimeError(
                    f"{plan.processes - len(flushed)} bench worker(s) stopped without writing "
                    f"their recording; see {log}"
                )
            deliveries = [json.loads(e) for e in plain.lrange(keys.deliveries, 0, -1)]
            holders = [json.loads(e) for e in plain.lrange(keys.holders, 0, -1)]
            notifies = [json.loads(e) for e in plain.lrange(keys.notifies, 0, -1)]
            worker_commands = sum(int(v) for v in flushed.values())
            worker_cpu = sum(float(v) for v in plain.hgetall(keys.cpu).values())
            delivery_cpu = sum(float(v) for v in plain.hgetall(keys.delivery_cpu).values())
            rss = {int(pid): int(peak) for pid, peak in plain.hgetall(keys.rss).items()}
            phase("cleaning up")
            return RunFacts(
                strategy=label,
                uploads=plan.uploads * plan.commits,
                started=driven.started,
                settled_at=settled_at,
                timed_out=drained is None,
                deliveries=deliveries,
                holders=holders,
                notifies=notifies,
                redis_commands=worker_commands + counter.value,
                worker_cpu_s=worker_cpu,
                worker_delivery_cpu_s=delivery_cpu,
                worker_rss_by_pid=rss,
                dead_lettered=dead,
                commits=[
                    commit_facts(services, a, driven.released.get(a.commitid))
                    for a in driven.commits
                ],
            )
        finally:
            services.close()
            plain.close()
            sender.close()
            watcher.close()
            if settings.broker_kind == "rabbitmq":
                # The run's queues, with their delay and dead-letter queues.
                delete_queues(settings.queue_names, settings.broker_url)


def uploads_pending(services: Services) -> int:
    with services.sessions() as session:
        return int(
            session.scalar(sa.select(sa.func.count()).where(Upload.state.in_(PENDING_STATES))) or 0
        )


def settle(broker: Any, services: Services, deadline: float, progress: Progress) -> float | None:
    """Wait for both queues (delayed and in-flight messages too) to drain.

    On RabbitMQ, which does not count the messages its consumers hold, the
    uploads must first all be final in PostgreSQL (app/runtime/brokers.py).
    Returns the wall time they drained, or None if ``deadline`` came first.
    """
    queues = services.settings.queue_names
    rabbit = services.settings.broker_kind == "rabbitmq"
    drained: float | None = None
    while drained is None and time.time() < deadline:
        try:
            if rabbit and uploads_pending(services):
                raise QueueJoinTimeout("uploads still pending")
            timeout = max(1, round(min(deadline - time.time(), 0.5) * 1000))
            join_queues(broker, queues, timeout_ms=timeout, interval_ms=JOIN_INTERVAL_MS)
            drained = time.time()
        except QueueJoinTimeout:
            pass
        with services.sessions() as session:
            merged = session.scalar(
                sa.select(sa.func.count()).where(Upload.state == UploadState.MERGED)
            )
        progress(int(merged or 0))
    return drained


@dataclass(frozen=True)
class ReferencePass:
    """One merge pass of all ``plan.uploads`` uploads of a commit, in-process."""

    wall_s: float
    cpu_s: float
    #: Bytes the merged report takes in memory once decoded, as a finisher
    #: holds it (``codec.load_part``, measured with tracemalloc).
    merged_report_bytes: int
    #: CPU seconds of each pass this one is the median of (one: itself).
    cpu_per_pass: tuple[float, ...] = ()


def median_reference(passes: list[ReferencePass]) -> ReferencePass:
    """The median wall and CPU seconds of ``passes`` (the same commit, each
    in a fresh environment), with every pass's CPU kept."""
    return ReferencePass(
        wall_s=statistics.median(p.wall_s for p in passes),
        cpu_s=statistics.median(p.cpu_s for p in passes),
        merged_report_bytes=max(p.merged_report_bytes for p in passes),
        cpu_per_pass=tuple(p.cpu_s for p in passes),
    )


def merged_report_in_memory(services: Services, commitid: int) -> int:
    """The traced size of the commit's merged report, decoded as a finisher decodes it."""
    with services.sessions() as session:
        blob = session.scalar(
            sa.select(CommitReport.report).where(CommitReport.commit_id == commitid)
        )
    assert blob, "the reference pass stored a merged report"
    tracing = tracemalloc.is_tracing()
    if not tracing:
        tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        part = codec.load_part(blob)
        size = tracemalloc.get_traced_memory()[0] - before
    finally:
        if not tracing:
            tracemalloc.stop()
    del part
    return size


#: Messages the floor measurement drains (about a second of the idle machine).
FLOOR_MESSAGES = 2000


def dramatiq_floor(plan: RunPlan) -> float:
    """Dramatiq's own CPU seconds per delivered message, on this machine, now.

    ``benchmarks/dramatiq_floor.py``'s "covworker broker" case (the app's
    broker and middleware, a do-nothing actor) with the bench's threads per
    process: the per-delivery allowance of the burst's CPU bound, measured
    in the same run as the strategies it bounds.
    """
    from benchmarks.dramatiq_floor import app_noop

    settings = plan.settings.model_copy(
        update={"namespace": f"cwbench-{uuid.uuid4().hex[:10]}-floor"}
    )
    cpu_s, _ = app_noop(settings, FLOOR_MESSAGES, plan.threads)
    return cpu_s / FLOOR_MESSAGES


def reference_merge_pass(plan: RunPlan, phase: Phase) -> ReferencePass:
    """One merge pass of all ``plan.uploads`` uploads of a commit, in-process:
    its wall seconds and its CPU seconds (this thread's)."""
    with fresh_environment(plan, "reference") as (db_url, namespace):
        settings = plan.settings.model_copy(update={"database_url": db_url, "namespace": namespace})
        services = Services.from_settings(settings)
        try:
            phase("uploading")
            (accepted,) = accept(services, 1, plan.uploads, plan.shape)
            phase("processing")
            process_in_driver(services, accepted.upload_ids)
            phase("one merge pass")
            started, cpu = time.perf_counter(), time.thread_time()
            ids = accepted.upload_ids
            result = merge_pass(services, accepted.repoid, accepted.commitid, ids, None)
            elapsed, cpu = time.perf_counter() - started, time.thread_time() - cpu
            assert len(result.merged) == plan.uploads, "the reference pass merged everything"
            phase("measuring the merged report")
            size = merged_report_in_memory(services, accepted.commitid)
            return ReferencePass(elapsed, cpu, size)
        finally:
            services.close()
