"""Benchmark: HTTP ingestion through ``covworker serve`` against ``covworker upload``.

Not a test: it measures, it does not assert. On the Redis and PostgreSQL at
``REDIS_URL`` / ``DATABASE_URL`` (a database of its own is created and
dropped; keys live under a namespace of their own and are deleted), it
starts ``covworker serve --workers 2`` and runs ``--jobs`` simulated CI jobs,
``--concurrency`` at once, each doing what codecov-cli's ``upload-coverage``
does: the POST (create commit + upload, reply with the PUT URL), then the
PUT of a v1 payload of the given size, each job on one keep-alive
connection. Reported per payload size: the POST latency p50/p99, complete
uploads (POST + PUT answered) per second, the server's CPU per upload (all
its processes), its PostgreSQL backends' (a local server) and the
client's, and the 1-minute load average. No worker
runs: this measures the front door, not the parsing. The client is a
minimal HTTP/1.1 client (it shares the cores with the server: httpx spent
more CPU per upload than the server did).

``--baseline DIR`` starts a second server from another checkout of the
code (``mkdir /tmp/base && git archive main | tar -x -C /tmp/base``) and
runs each size against it and against this tree back to back, on the same
payload; the baseline gets a database of its own, migrated by its own
migrations, and ``--baseline-python`` runs it with the interpreter of a
virtualenv holding its own dependencies (``pip install -e /tmp/base``).

Then, on ``covworker serve --workers 1``, one 100 MB payload: the server
process's peak RSS (VmHWM) against its RSS before. Then, in the same run,
``covworker upload`` (a process per upload, as a CI job would run it) and
the in-process ``accept_uploads`` it calls, per upload.

    REDIS_URL=redis://127.0.0.1:6379/0 \\
    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/covworker \\
        python benchmarks/api_ingest.py [--jobs 300] [--concurrency 50] [--sizes 100000 1000000] \\
            [--baseline DIR [--baseline-python VENV/bin/python]]

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
import zlib
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import redis
import sqlalchemy as sa
from sqlalchemy.engine import make_url

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.db.engine import make_engine, make_sessionmaker
from app.db.migrate import upgrade
from app.db.repos import add_repository
from app.ingest.accept import accept_uploads
from app.runtime.services import Services
from app.settings import Settings
from tests.support.processes import Served, covworker_serve, server_environment

ROOT = Path(__file__).resolve().parents[1]
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


class Connection:
    """One keep-alive HTTP/1.1 connection, as little client as can be: the
    load generator shares the 2 cores with the server, and a full client
    (httpx) spends more CPU per upload than the server does."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def request(
        self, method: str, target: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        head = f"{method} {target} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
        head += "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        head += f"Content-Length: {len(body)}\r\n\r\n"
        # One write: a head and a body sent apart can wait on a delayed ACK.
        self.writer.write(head.encode() + body)
        await self.writer.drain()
        status_line, *lines = (await self.reader.readuntil(b"\r\n\r\n")).decode().split("\r\n")
        fields = {k.lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines if ln)}
        if fields.get("transfer-encoding") == "chunked":
            reply = b""
            while size := int((await self.reader.readuntil(b"\r\n")).strip(), 16):
                reply += (await self.reader.readexactly(size + 2))[:-2]
            await self.reader.readuntil(b"\r\n")
        else:
            reply = await self.reader.readexactly(int(fields.get("content-length", "0")))
        if fields.get("connection") == "close":
            await self.close()
        return int(status_line.split()[1]), reply

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.reader = self.writer = None


async def ci_jobs(
    url: str, token: str, payload: bytes, jobs: int, concurrency: int, run: int = 0
) -> dict:
    """``jobs`` upload-coverage + PUT rounds, ``concurrency`` at once, each
    job on one keep-alive connection (as codecov-cli's session is)."""
    parsed = urlsplit(url)
    host, port = parsed.hostname or "127.0.0.1", parsed.port or 80
    create = f"{parsed.path}/upload/github/bench::::api/upload-coverage"
    headers = {"Authorization": f"token {token}", "User-Agent": "codecov-cli/11.3.1",
               "Content-Type": "application/json"}  # fmt: skip
    latencies: list[float] = []
    failures = 0
    reasons: dict[str, int] = {}
    idle = asyncio.Queue[Connection]()
    for _ in range(concurrency):
        idle.put_nowait(Connection(host, port))

    def failed(reason: str) -> None:
        nonlocal failures
        failures += 1
        reasons[reason] = reasons.get(reason, 0) + 1

    async def job(i: int) -> None:
        body = json.dumps(
            {"commitid": f"{run:08x}{i // 20:032x}", "branch": "main", "flags": [f"job{i % 20}"],
             "name": f"job-{i}", "ci_service": "github-actions", "code": "default",
             "report_payload_bytes": len(payload)}
        ).encode()  # fmt: skip
        conn = await idle.get()
        try:
            started = time.perf_counter()
            status, reply = await conn.request("POST", create, headers, body)
            latencies.append(time.perf_counter() - started)
            if status != 201:
                return failed(f"POST {status} {reply[:120]!r}")
            location = urlsplit(json.loads(reply)["raw_upload_location"])
            target = f"{location.path}?{location.query}"
            status, reply = await conn.request("PUT", target, {}, payload)
            if status != 200:
                return failed(f"PUT {status} {reply[:120]!r}")
        finally:
            idle.put_nowait(conn)

    await asyncio.gather(*(job(10**6 + i) for i in range(min(concurrency, 10))))  # warm-up
    failures = 0
    reasons.clear()
    latencies.clear()
    client_cpu, started = time.process_time(), time.perf_counter()
    await asyncio.gather(*(job(i) for i in range(jobs)))
    wall = time.perf_counter() - started
    client_cpu = time.process_time() - client_cpu
    while not idle.empty():
        await idle.get_nowait().close()
    return {
        "jobs": jobs,
        "failures": failures,
        "create_p50_ms": 1000 * statistics.median(latencies),
        "create_p99_ms": 1000 * percentile(latencies, 99),
        "uploads_per_s": (jobs - failures) / wall,
        "client_cpu_ms_per_upload": 1000 * client_cpu / jobs,
        "failure_reasons": reasons,
    }


@contextmanager
def serve_from(
    src: Path, env: dict[str, str], log: Path, workers: int, python: str = sys.executable
) -> Iterator[Served]:
    """``covworker serve --port 0 --workers N`` run from the source tree
    ``src`` (this one, or a checkout of another version to compare with)
    by the interpreter ``python`` (its environment's packages)."""
    env = {**env, "PYTHONPATH": str(src)}
    with covworker_serve(env, log, workers=workers, python=python, cwd=src) as served:
        yield served


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


def database_cpu_s(database: str) -> float:
    """CPU seconds of the PostgreSQL backends serving ``database`` (on this
    machine; their process title names the database)."""
    ticks, total = os.sysconf("SC_CLK_TCK"), 0
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if f" {database} ".encode() not in (proc / "cmdline").read_bytes().replace(b"\0", b" "):
                continue
            fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
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
            [sys.executable, "-m", "app.cli.main", "upload", "--create", "--repo", REPO,
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
    parser.add_argument(
        "--baseline",
        type=Path,
        help="a checkout of another version (e.g. `git archive main | tar -x -C DIR`): "
        "each size runs against its server and this tree's, back to back; it gets a "
        "database of its own, migrated by its own migrations",
    )
    parser.add_argument(
        "--baseline-python",
        default=sys.executable,
        help="the interpreter (of a virtualenv with the baseline's dependencies) that "
        "runs the baseline (default: this one)",
    )
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # clean up on a kill too

    base = Settings()
    fresh = server_environment(base.database_url, base.redis_url, "api")
    namespace, db_name, database_url, env = (
        fresh.namespace,
        fresh.database,
        fresh.database_url,
        fresh.env,
    )
    upgrade(database_url)
    engine = make_engine(database_url)
    with make_sessionmaker(engine).begin() as session:
        token = add_repository(session, REPO).token
    # Each server: its source tree, interpreter, environment, database and token.
    servers = [("this tree", ROOT, sys.executable, env, db_name, token)]
    if args.baseline:
        base_db = make_url(database_url).set(database=f"{db_name}_base")
        base_url = base_db.render_as_string(hide_password=False)
        base_env = {**env, "DATABASE_URL": base_url, "COVWORKER_NAMESPACE": f"{namespace}-b"}
        subprocess.run(
            [args.baseline_python, "-c",
             "import sys; from app.db.migrate import upgrade; upgrade(sys.argv[1])", base_url],
            env={**base_env, "PYTHONPATH": str(args.baseline.resolve())},
            cwd=args.baseline.resolve(), check=True,
        )  # fmt: skip
        base_engine = make_engine(base_url)
        with make_sessionmaker(base_engine).begin() as session:
            base_token = add_repository(session, REPO).token
        base_engine.dispose()
        servers.insert(
            0,
            ("baseline", args.baseline.resolve(), args.baseline_python, base_env,
             str(base_db.database), base_token),
        )  # fmt: skip
    results: dict[str, object] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="covworker-bench-api-") as tmp:
            tmp_path = Path(tmp)
            with ExitStack() as stack:
                served = {
                    label: stack.enter_context(
                        serve_from(src, server_env, tmp_path / f"api-{n}.log", 2, python)
                    )
                    for n, (label, src, python, server_env, _, _) in enumerate(servers)
                }
                run = 0
                for size in args.sizes:
                    payload = v1_payload(size, seed=size)
                    # back to back, on the same payload
                    for label, _, _, _, server_db, server_token in servers:
                        run += 1
                        key = f"{label}: http {size // 1000} KB"
                        server = served[label]
                        cpu, db_cpu = tree_cpu_s(server.pid), database_cpu_s(server_db)
                        figures = asyncio.run(
                            ci_jobs(
                                server.url, server_token, payload, args.jobs, args.concurrency, run
                            )
                        )
                        cpu = tree_cpu_s(server.pid) - cpu
                        db_cpu = database_cpu_s(server_db) - db_cpu
                        rounds = args.jobs + min(args.concurrency, 10)  # with the warm-up
                        figures["server_cpu_ms_per_upload"] = 1000 * cpu / rounds
                        figures["database_cpu_ms_per_upload"] = 1000 * db_cpu / rounds
                        figures["load_average_1m"] = os.getloadavg()[0]
                        results[key] = {"payload_bytes": len(payload), **figures}
                        print(json.dumps({key: results[key]}), flush=True)
            if not args.no_big:
                big = tmp_path / "big.json"
                big.write_bytes(noise_payload(BIG_PAYLOAD))
                with covworker_serve(env, tmp_path / "api-big.log", workers=1) as served:
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
        patterns = [f"{ns}:*" for ns in (namespace, f"{namespace}-b")]
        patterns += [f"{ns}-dramatiq:*" for ns in (namespace, f"{namespace}-b")]
        for pattern in patterns:
            keys = list(client.scan_iter(match=pattern, count=1000))
            for start in range(0, len(keys), 500):
                client.delete(*keys[start : start + 500])
        client.close()
        admin_url = make_url(database_url).set(database="postgres")
        admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            for name in (db_name, f"{db_name}_base"):
                conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
