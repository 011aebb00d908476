"""Benchmark: JUnit parsing, and a commit of many test-results uploads settling.

Not a test: it measures, it does not assert.

1. Parsing: a pytest-shaped JUnit document of ``--parse-cases`` cases
   (2 % failed with a 20-line traceback, 3 % skipped), parsed by
   ``app.testresults.junit.parse_junit``; the best of ``--repeat`` runs, in
   CPU seconds of this process (one core). Also the whole per-upload parse
   step (decode the codecov-cli payload, parse, name each test), the part of
   ``store_test_results`` before the database.
2. Settling: ``--uploads`` test-results uploads of ``--cases`` cases each,
   for one commit, sent as codecov-cli sends them (POST
   ``/upload/test_results/v1`` then the PUT of the payload, ``--concurrency``
   at once) to a real ``covworker serve``, processed by real ``dramatiq
   app.actors`` workers (``--processes`` x ``--threads``), on the Redis and
   PostgreSQL at ``REDIS_URL`` / ``DATABASE_URL`` (a database of its own,
   dropped afterwards; keys under a namespace of their own, deleted).
   Reported: from the last upload processed (its ``processed_at``) to the
   commit's notification carrying the test totals (its ``created_at``), both
   database timestamps; then the time to read the commit's test results and
   render the pull-request comment's test section; the totals beside what
   was sent.

    REDIS_URL=redis://127.0.0.1:6379/0 \\
    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/covworker \\
        python benchmarks/testresults_bench.py [--uploads 200] [--cases 2000] [--parse-cases 200000]
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import random
import signal
import sys
import tempfile
import time
import uuid
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import redis
import sqlalchemy as sa
from sqlalchemy.engine import make_url

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.db.engine import make_engine, make_sessionmaker  # noqa: E402
from app.db.migrate import upgrade  # noqa: E402
from app.db.models import Commit, CommitReport, Notification, Upload, UploadState  # noqa: E402
from app.db.repos import add_repository  # noqa: E402
from app.settings import Settings  # noqa: E402
from app.testresults.comment import tests_section  # noqa: E402
from app.testresults.junit import parse_junit  # noqa: E402
from app.testresults.store import decode_test_results_payload, flags_key, test_key  # noqa: E402
from app.testresults.summary import commit_tests  # noqa: E402
from tests.support.processes import (  # noqa: E402
    covworker_serve,
    dramatiq_processes,
    server_environment,
)

REPO = "bench/tests"
TRACEBACK = "\n".join(
    f'    File "tests/test_mod{i}.py", line {i * 7}, in helper_{i}\n      value = compute({i})'
    for i in range(10)
)


def junit_document(cases: int, seed: int) -> tuple[bytes, dict[str, int]]:
    """A pytest-shaped JUnit document, and how many cases of each outcome it holds."""
    rng = random.Random(seed)
    parts = ['<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">']
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    for i in range(cases):
        cls, name, t = f"tests.test_module_{i // 50}", f"test_case_{i}[param-{i % 7}]", rng.random()
        roll = rng.random()
        if roll < 0.02:
            counts["failed"] += 1
            parts.append(
                f'<testcase classname="{cls}" name="{name}" time="{t:.3f}">'
                f'<failure message="assert {i} == {i + 1}">{TRACEBACK}\n'
                f"E       assert {i} == {i + 1}</failure></testcase>"
            )
        elif roll < 0.05:
            counts["skipped"] += 1
            parts.append(
                f'<testcase classname="{cls}" name="{name}" time="0.000">'
                '<skipped type="pytest.skip" message="needs a GPU">needs a GPU</skipped>'
                "</testcase>"
            )
        else:
            counts["passed"] += 1
            parts.append(f'<testcase classname="{cls}" name="{name}" time="{t:.3f}" />')
    parts.append("</testsuite></testsuites>")
    return "".join(parts).encode(), counts


def cli_payload(document: bytes) -> bytes:
    """The PUT body codecov-cli sends for ``--report-type test_results``."""
    data = base64.b64encode(zlib.compress(document)).decode()
    entry = {"filename": "junit.xml", "format": "base64+compressed", "data": data, "labels": ""}
    return json.dumps({"test_results_files": [entry]}).encode()


def cpu(fn: object, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.process_time()
        fn()  # type: ignore[operator]
        best = min(best, time.process_time() - started)
    return best


def parsing(cases: int, repeat: int) -> dict[str, float]:
    document, _ = junit_document(cases, seed=1)
    payload = cli_payload(document)
    parse_s = cpu(lambda: parse_junit(document), repeat)

    def whole() -> None:
        for item in decode_test_results_payload(payload, 1 << 30):
            flags = flags_key(["unit"])
            for case in parse_junit(item.data):
                test_key(case.suite, case.name, flags, "job")

    whole_s = cpu(whole, repeat)
    return {
        "cases": cases,
        "mb": len(document) / 1e6,
        "parse_cases_per_s": cases / parse_s,
        "upload_step_cases_per_s": cases / whole_s,
    }


def settling(args: argparse.Namespace) -> dict[str, object]:
    base = Settings()
    fresh = server_environment(base.database_url, base.redis_url, "tr")
    namespace, database_url, env = fresh.namespace, fresh.database_url, fresh.env
    upgrade(database_url)
    engine = make_engine(database_url)
    with make_sessionmaker(engine).begin() as session:
        token = add_repository(session, REPO).token
    sha = uuid.uuid4().hex + uuid.uuid4().hex[:8]
    documents = [junit_document(args.cases, seed=i) for i in range(args.uploads)]
    expected = {k: sum(d[1][k] for d in documents) for k in ("passed", "failed", "skipped")}
    payloads = [cli_payload(d[0]) for d in documents]
    try:
        with tempfile.TemporaryDirectory(prefix="covworker-bench-tr-") as tmp:
            logs = Path(tmp)
            with (
                dramatiq_processes(
                    "app.actors", env, logs / "worker.log",
                    processes=args.processes, threads=args.threads,
                ),
                covworker_serve(env, logs / "api.log", workers=2) as served,
            ):  # fmt: skip

                def upload(i: int) -> None:
                    body = {
                        "slug": REPO.replace("/", "::::"), "commit": sha, "service": "github",
                        "branch": "main", "flags": ["unit"], "name": f"job-{i}",
                        "report_payload_bytes": len(payloads[i]), "file_not_found": False,
                    }  # fmt: skip
                    with httpx.Client(timeout=120) as http:
                        made = http.post(
                            f"{served.url}/upload/test_results/v1",
                            json=body,
                            headers={"Authorization": f"token {token}"},
                        )
                        made.raise_for_status()
                        http.put(made.json()["raw_upload_location"], content=payloads[i])

                started = time.monotonic()
                with ThreadPoolExecutor(args.concurrency) as pool:
                    list(pool.map(upload, range(args.uploads)))
                sent_s = time.monotonic() - started
                note = wait_for_notification(engine, sha, args.uploads, args.timeout)
                wall_s = time.monotonic() - started
                comment_s, section = comment(engine, sha)
    finally:
        engine.dispose()
        drop(base.database_url, fresh.database)
        client = redis.Redis.from_url(base.redis_url)
        for key in client.scan_iter(f"{namespace}*", count=1000):
            client.delete(key)
        client.close()
    last_processed, notified, totals = note
    return {
        "uploads": args.uploads,
        "cases_per_upload": args.cases,
        "sent_s": sent_s,
        "wall_s": wall_s,
        "settled_after_last_processed_s": (notified - last_processed).total_seconds(),
        "comment_s": comment_s,
        "comment_first_line": section.splitlines()[0] if section else None,
        "totals": totals,
        "expected": expected,
        "load_avg_1m": os.getloadavg()[0],
    }


def wait_for_notification(
    engine: sa.Engine, sha: str, uploads: int, timeout: float
) -> tuple[object, object, dict[str, int]]:
    """Poll until every upload is merged and the commit's notification covers them."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with engine.connect() as conn:
            commit_id = conn.scalar(sa.select(Commit.id).where(Commit.sha == sha))
            merged = conn.scalar(
                sa.select(sa.func.count()).where(
                    Upload.commit_id == commit_id, Upload.state == UploadState.MERGED
                )
            )
            if merged == uploads:
                version = conn.scalar(
                    sa.select(CommitReport.version).where(CommitReport.commit_id == commit_id)
                )
                row = conn.execute(
                    sa.select(Notification.created_at, Notification.test_results).where(
                        Notification.commit_id == commit_id,
                        Notification.report_version == version,
                    )
                ).first()
                if row is not None and row[1] is not None:
                    last = conn.scalar(
                        sa.select(sa.func.max(Upload.processed_at)).where(
                            Upload.commit_id == commit_id
                        )
                    )
                    return last, row[0], row[1]["totals"]
        time.sleep(0.2)  # polling the database for the condition
    raise SystemExit(f"not settled within {timeout} s")


def comment(engine: sa.Engine, sha: str) -> tuple[float, str | None]:
    """Seconds to read the settled commit's test results and render the
    pull-request comment's test section from them."""
    started = time.perf_counter()
    with make_sessionmaker(engine)() as session:
        commit = session.scalars(sa.select(Commit).where(Commit.sha == sha)).one()
        section = tests_section(commit_tests(session, commit.repository_id, commit.id))
    return time.perf_counter() - started, section


def drop(admin_url: str, name: str) -> None:
    admin = make_engine(make_url(admin_url).set(database="postgres").render_as_string(False))
    with admin.connect() as conn:
        conn.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql(
            f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'
        )
    admin.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parse-cases", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--uploads", type=int, default=200)
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--skip-settle", action="store_true")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    print(json.dumps({"parsing": parsing(args.parse_cases, args.repeat)}, indent=2), flush=True)
    if not args.skip_settle:
        print(json.dumps({"settling": settling(args)}, indent=2, default=str), flush=True)


if __name__ == "__main__":
    main()
