"""Benchmark: HTTP ingestion through ``covworker serve`` against ``covworker upload``.

Not a test: it measures, it does not assert. On the Redis and PostgreSQL at
``REDIS_URL`` / ``DATABASE_URL`` (a database of its own is created and
dropped; keys live under a namespace of their own and are deleted), it
starts ``covworker serve --workers 2`` and runs ``--jobs`` simulated CI jobs,
``--concurrency`` at once, each doing what codecov-cli's ``upload-coverage``
does: the POST (create commit + upload, reply with the PUT URL), then the
PUT of a v1 payload of the given size. Reported per payload size: the POST
latency p50/p99 and complete uploads (POST + PUT answered) per second. No
worker runs: this measures the front door, not the parsing.

Then, on ``covworker serve --workers 1``, one 100 MB payload: the server
process's peak RSS (VmHWM) against its RSS before. Then, in the same run,
``covworker upload`` (a process per upload, as a CI job would run it) and
the in-process ``accept_uploads`` it calls, per upload.

    REDIS_URL=redis://127.0.0.1:6379/0 \\
    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/covworker \\
        python benchmarks/api_ingest.py [--jobs 300] [--concurrency 50] [--sizes 100000 1000000]

The client runs on the same machine as the server (it takes CPU too).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
import zlib
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import redis
import sqlalchemy as sa
from sqlalchemy.engine import make_url

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.bench.processes import covworker_serve
from app.db.engine import make_engine, make_sessionmaker
from app.db.migrate import upgrade
from app.pipeline.uploads import accept_uploads
from app.repos import add_repository
from app.services import Services
from app.settings import Settings

REPO = "bench/api"
BIG_PAYLOAD = 100_000_000


def lcov_report(size: int, seed: int) -> bytes:
    """An LCOV report of about ``size`` bytes (distinct files, so it compresses like real ones)."""
    rng, out, total, n = random.Random(seed), [], 0, 0
    while total < size:
        lines = "".join(f"DA:{ln},{rng.randint(0, 9)}\n" for ln in range(1, 40))
        record = f"SF:src/m{n:05d}/f{rng.getrandbits(32):08x}.py\n{lines}end_of_record\n"
        out.append(record)
        total += len(record)
        n += 1
    return "".join(out).encode()[:size]


def v1_payload(size: int, seed: int) -> bytes:
    """A codecov-cli v1 payload of about ``size`` bytes (its file grown until it is)."""
    report_size = size
    while True:
        data = base64.b64encode(zlib.compress(lcov_report(report_size, seed))).decode()
        body = json.dumps(
            {"report_fixes": {"format": "legacy", "value": {}}, "network_files": [],
             "coverage_files": [{"filename": "lcov.info", "format": "base64+compressed",
                                 "data": data, "labels": ""}], "metadata": {}}
        ).encode()  # fmt: skip
        if len(body) >= size:
            return body
        report_size = int(report_size * size / len(body) * 1.05)


def noise_payload(size: int) -> bytes:
    """A v1 payload of about ``size`` bytes whose one file is incompressible
    noise: cheap to make at 100 MB, and the api never parses payloads."""
    noise = zlib.compress(os.urandom(size * 3 // 4), 1)
    data = base64.b64encode(noise).decode()
    return json.dumps(
        {"network_files": [], "coverage_files": [
            {"filename": "big.info", "format": "base64+compressed", "data": data}]}
    ).encode()  # fmt: skip


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


async def ci_jobs(url: str, token: str, payload: bytes, jobs: int, concurrency: int) -> dict:
    """``jobs`` upload-coverage + PUT rounds, ``concurrency`` at once."""
    create = f"{url}/upload/github/bench::::api/upload-coverage"
    headers = {"Authorization": f"token {token}", "User-Agent": "codecov-cli/11.3.1"}
    latencies: list[float] = []
    failures = 0
    reasons: dict[str, int] = {}
    gate = asyncio.Semaphore(concurrency)
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)

    async def job(client: httpx.AsyncClient, i: int) -> None:
        nonlocal failures
        body = {"commitid": f"{i // 20:040x}", "branch": "main", "flags": [f"job{i % 20}"],
                "name": f"job-{i}", "ci_service": "github-actions", "code": "default",
                "report_payload_bytes": len(payload)}  # fmt: skip
        async with gate:
            started = time.perf_counter()
            created = await client.post(create, json=body, headers=headers)
            latencies.append(time.perf_counter() - started)
            if created.status_code != 201:
                failures += 1
                reason = f"POST {created.status_code} {created.text[:120]}"
                reasons[reason] = reasons.get(reason, 0) + 1
                return
            put = await client.put(created.json()["raw_upload_location"], content=payload)
            if put.status_code != 200:
                failures += 1
                reason = f"PUT {put.status_code} {put.text[:120]}"
                reasons[reason] = reasons.get(reason, 0) + 1

    async with httpx.AsyncClient(timeout=300, limits=limits) as client:
        await asyncio.gather(*(job(client, 10**6 + i) for i in range(min(concurrency, 10))))  # warm
        failures = 0
        reasons.clear()
        latencies.clear()
        started = time.perf_counter()
        await asyncio.gather(*(job(client, i) for i in range(jobs)))
        wall = time.perf_counter() - started
    return {
        "jobs": jobs,
        "failures": failures,
        "create_p50_ms": 1000 * statistics.median(latencies),
        "create_p99_ms": 1000 * percentile(latencies, 99),
        "uploads_per_s": (jobs - failures) / wall,
        "failure_reasons": reasons,
    }


def tree_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) of ``pid`` and its live children."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if stat.parent.name == str(pid) or fields[1] == str(pid):
            total += int(fields[11]) + int(fields[12])
    return total / ticks


def rss_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


async def stream_file(path: Path) -> AsyncIterator[bytes]:
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            yield chunk


async def one_big_upload(url: str, token: str, path: Path) -> tuple[int, float]:
    create = f"{url}/upload/github/bench::::api/upload-coverage"
    body = {"commitid": "f" * 40, "code": "default", "report_payload_bytes": path.stat().st_size}
    async with httpx.AsyncClient(timeout=600) as client:
        created = await client.post(create, json=body, headers={"Authorization": f"token {token}"})
        started = time.perf_counter()
        put = await client.put(
            created.json()["raw_upload_location"],
            content=stream_file(path),
            headers={"Content-Length": str(path.stat().st_size)},
        )
        return put.status_code, time.perf_counter() - started


def cli_uploads(env: dict[str, str], report: Path, n: int) -> float:
    """Seconds per ``covworker upload`` process (start, connect, store, send)."""
    started = time.perf_counter()
    for i in range(n):
        done = subprocess.run(
            [sys.executable, "-m", "app.cli.main", "upload", "--repo", REPO,
             "--commit", f"{0xC11 + i:040x}", str(report)],
            env=env, capture_output=True, text=True, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(done.stderr)
    return (time.perf_counter() - started) / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=300, help="uploads per size (default 300)")
    parser.add_argument("--concurrency", type=int, default=50, help="jobs at once (default 50)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--cli-uploads", type=int, default=5, help="covworker upload runs")
    parser.add_argument("--no-big", action="store_true", help="skip the 100 MB upload")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # clean up on a kill too

    base = Settings()
    namespace = f"bench-api-{uuid.uuid4().hex[:8]}"
    db_name = f"covworker_bench_api_{uuid.uuid4().hex[:8]}"
    db_url = make_url(base.database_url).set(database=db_name)
    database_url = db_url.render_as_string(hide_password=False)
    env = {k: v for k, v in os.environ.items() if not k.startswith("COVWORKER_")}
    env.update(
        DATABASE_URL=database_url,
        REDIS_URL=base.redis_url,
        COVWORKER_NAMESPACE=namespace,
        COVWORKER_UPLOAD_URL_SECRET=uuid.uuid4().hex,
        PYTHONUNBUFFERED="1",
    )
    upgrade(database_url)
    engine = make_engine(database_url)
    with make_sessionmaker(engine).begin() as session:
        token = add_repository(session, REPO).token
    results: dict[str, object] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="covworker-bench-api-") as tmp:
            tmp_path = Path(tmp)
            with covworker_serve(env, tmp_path / "api.log", workers=2) as served:
                for size in args.sizes:
                    payload = v1_payload(size, seed=size)
                    cpu = tree_cpu_s(served.pid)
                    try:
                        figures = asyncio.run(
                            ci_jobs(served.url, token, payload, args.jobs, args.concurrency)
                        )
                    except httpx.HTTPError:
                        print((tmp_path / "api.log").read_text()[-3000:], file=sys.stderr)
                        raise
                    cpu = tree_cpu_s(served.pid) - cpu
                    rounds = args.jobs + min(args.concurrency, 10)  # with the warm-up
                    figures["server_cpu_ms_per_upload"] = 1000 * cpu / rounds
                    results[f"http {size // 1000} KB"] = {"payload_bytes": len(payload), **figures}
                    print(
                        json.dumps({f"http {size // 1000} KB": results[f"http {size // 1000} KB"]})
                    )
            if not args.no_big:
                big = tmp_path / "big.json"
                big.write_bytes(noise_payload(BIG_PAYLOAD))
                with covworker_serve(env, tmp_path / "api-1.log", workers=1) as served:
                    before = rss_kb(served.pid, "VmRSS")
                    status, seconds = asyncio.run(one_big_upload(served.url, token, big))
                    peak = rss_kb(served.pid, "VmHWM")
                results["100 MB upload"] = {
                    "status": status,
                    "payload_bytes": big.stat().st_size,
                    "put_s": seconds,
                    "rss_before_mb": before / 1024,
                    "peak_rss_mb": peak / 1024,
                    "peak_over_body": peak * 1024 / big.stat().st_size,
                }
                print(json.dumps({"100 MB upload": results["100 MB upload"]}))
            report = tmp_path / "lcov.info"
            report.write_bytes(lcov_report(args.sizes[0], seed=3))
            per_cli = cli_uploads(env, report, args.cli_uploads)
            settings = Settings(database_url=database_url, redis_url=base.redis_url,
                                namespace=namespace)  # fmt: skip
            services = Services.from_settings(settings)
            started = time.perf_counter()
            for i in range(args.cli_uploads * 4):
                accept_uploads(
                    services, REPO, f"{0xACC + i:040x}", [("lcov.info", report.read_bytes())]
                )
            per_call = (time.perf_counter() - started) / (args.cli_uploads * 4)
            services.close()
            results["covworker upload"] = {
                "report_bytes": report.stat().st_size,
                "process_per_upload_ms": 1000 * per_cli,
                "accept_uploads_in_process_ms": 1000 * per_call,
            }
            print(json.dumps({"covworker upload": results["covworker upload"]}))
    finally:
        engine.dispose()
        client = redis.Redis.from_url(base.redis_url)
        for pattern in (f"{namespace}:*", f"{namespace}-dramatiq:*"):
            keys = list(client.scan_iter(match=pattern, count=1000))
            for start in range(0, len(keys), 500):
                client.delete(*keys[start : start + 500])
        client.close()
        admin = sa.create_engine(db_url.set(database="postgres"), isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{db_url.database}" WITH (FORCE)'))
        admin.dispose()
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
