"""Hostile test-results uploads against a real ``covworker serve``, real
``dramatiq app.actors`` workers, Redis and PostgreSQL.

- a 30 KB gzip of 250,000 empty ``<testcase/>`` (750,000 rows once stored)
  fails its upload with the cap for its size, and writes no row, at a cost
  of the worker its size bounds (2 CPU-s and 64 MiB, and 0.1 ms and 512
  bytes per byte uploaded, where it took 38 CPU-s and +895 MiB);
- the route takes the per-commit cap on slots awaiting their PUT that the
  coverage routes take, counted together;
- without ``service``, an unknown repository is answered as a known one
  with a wrong token: the same 401, the same words;
- ``/-/tests`` is computed once, then served from Redis while fresh: with
  400,000 runs of history the first GET aggregates them (270-460 ms of
  PostgreSQL CPU), and the GETs within the cache cost PostgreSQL only the
  repository's look-up (under 20 ms for 5 GETs; 0 measured) and the server
  under 20 ms each (``-s`` prints the figures).
"""

from __future__ import annotations

import gzip
import os
import time
from pathlib import Path

import httpx
import pytest
import redis
import sqlalchemy as sa

from app.db.models import Upload, UploadState
from app.testresults.cached import summary_cache_key
from app.testresults.junit import max_test_cases
from app.testresults.models import TestRun
from tests.support.brokers import settle
from tests.support.processes import (
    add_repo,
    covworker_serve,
    dramatiq_workers,
    migrated_database,
    process_cost,
    reset_peak_rss,
)
from tests.support.testresults import payload

pytestmark = [pytest.mark.e2e, pytest.mark.integration, pytest.mark.timeout(600)]

SHA = "f" * 40
ROUTE = "/upload/test_results/v1"
#: Tests x days of daily history seeded for ``/-/tests``: 400,000 runs.
TESTS, DAYS = 20_000, 20
_TICKS = os.sysconf("SC_CLK_TCK")


def body(slug: str, **changes: object) -> dict[str, object]:
    return {"slug": slug, "commit": SHA, "service": "github", "name": "py311", **changes}


def wait_until_ready(log: Path, timeout_s: float = 120) -> None:
    """Until the worker process has started (its imports are not the upload's cost)."""
    deadline = time.monotonic() + timeout_s
    while b"Worker process is ready for action" not in log.read_bytes():
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.1)


def seed_history(engine: sa.Engine, repository_id: int) -> None:
    """``TESTS`` x ``DAYS`` runs of daily history on the default branch, one in
    20 tests failing every third day."""
    with engine.begin() as conn:
        conn.execute(
            sa.text(
                "INSERT INTO tests (repository_id, test_key, suite, name, flags, job, created_at) "
                "SELECT :repo, k, 'tests.test_mod' || (k % 100), 'test_case_' || k, '', '', now() "
                "FROM generate_series(1, :tests) AS k"
            ),
            {"repo": repository_id, "tests": TESTS},
        )
        conn.execute(
            sa.text(
                "INSERT INTO test_daily (repository_id, test_key, day, default_branch, runs, "
                "passed, failed, skipped, flaky, duration_sum) "
                "SELECT :repo, k, current_date - :days + d, true, 1, f, 1 - f, 0, 0, k % 97 "
                "FROM generate_series(1, :tests) AS k, generate_series(0, :days - 1) AS d, "
                "LATERAL (SELECT CASE WHEN k % 20 = 0 AND d % 3 = 0 THEN 0 ELSE 1 END AS f) s"
            ),
            {"repo": repository_id, "tests": TESTS, "days": DAYS},
        )
        conn.execute(sa.text("ANALYZE tests, test_daily"))


def database_cpu_s(engine: sa.Engine) -> float:
    """CPU seconds of the PostgreSQL backends connected to the database (the
    server's and the workers' pools), from ``/proc/PID/stat``."""
    with engine.connect() as conn:
        pids = conn.scalars(
            sa.text(
                "SELECT pid FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        ).all()
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / _TICKS
    return total


def test_hostile_test_results_uploads_are_bounded_capped_and_tell_nothing(
    tmp_path: Path, namespace: str
) -> None:
    cases = b"".join(b'<testcase name="t%d"/>' % i for i in range(250_000))
    bomb = gzip.compress(payload(b"<testsuite>" + cases + b"</testsuite>"))
    assert len(bomb) < 40_000
    with migrated_database(
        namespace,
        COVWORKER_MAX_AWAITING_UPLOADS="3",
        COVWORKER_TESTRESULTS_SUMMARY_CACHE_S="600",
    ) as (db_url, env):
        token = add_repo(env, "acme/web")
        add_repo(env, "acme/private", "--private")
        log = tmp_path / "worker.log"
        with (
            dramatiq_workers(env, log, processes=1, threads=2) as workers,
            covworker_serve(env, tmp_path / "api.log") as served,
            httpx.Client(base_url=served.url, timeout=120) as http,
        ):
            auth = {"Authorization": f"token {token}"}
            created = http.post(ROUTE, json=body("acme::::web"), headers=auth)
            assert created.status_code == 201, created.text
            wait_until_ready(log)
            reset_peak_rss(workers.pid)
            idle = process_cost(workers.pid)
            put = http.put(created.json()["raw_upload_location"], content=bomb)
            assert put.status_code == 200, put.text
            settle(env, 300)
            worker = process_cost(workers.pid)
            # the slot cap, counted with the coverage route's slots of the commit
            coverage = http.post(
                "/upload/github/acme::::web/upload-coverage",
                json={"commitid": SHA, "code": "default"},
                headers=auth,
            )
            answers = [http.post(ROUTE, json=body("acme::::web"), headers=auth) for _ in range(3)]
            # without service: an unknown repository, a known one, the same answer
            probes = [
                http.post(ROUTE, json=body(f"acme::::{name}", service=None), headers=auth)
                for name in ("nope", "private")
            ]
            # /-/tests: the first GET aggregates the history, the next ones are cached
            engine = sa.create_engine(db_url)
            seed_history(engine, 1)
            serving, db_cpu = process_cost(served.pid).cpu_s, database_cpu_s(engine)
            tests_pages = [http.get("/-/tests/acme/web")]
            first_serve = process_cost(served.pid).cpu_s - serving
            first_db = database_cpu_s(engine) - db_cpu
            serving, db_cpu = process_cost(served.pid).cpu_s, database_cpu_s(engine)
            tests_pages += [http.get("/-/tests/acme/web") for _ in range(5)]
            cached_serve = process_cost(served.pid).cpu_s - serving
            cached_db = database_cpu_s(engine) - db_cpu

        try:
            with engine.connect() as conn:
                state, error = conn.execute(
                    sa.select(Upload.state, Upload.error).where(Upload.id == 1)
                ).one()
                runs = conn.scalar(sa.select(sa.func.count()).select_from(TestRun))
        finally:
            engine.dispose()
    assert state == UploadState.ERROR
    assert error == (
        f"test results file junit-0.xml: the JUnit XML holds more than "
        f"{max_test_cases(len(bomb))} test cases (the limit for an upload of {len(bomb)} bytes)"
    )
    assert runs == 0
    assert worker.cpu_s - idle.cpu_s < 2 + len(bomb) / 10_000, (worker, idle)
    assert worker.peak_rss - idle.peak_rss < 64 * 1024 * 1024 + 512 * len(bomb), (worker, idle)
    assert coverage.status_code == 201, coverage.text
    assert [a.status_code for a in answers] == [201, 201, 429]
    assert "COVWORKER_MAX_AWAITING_UPLOADS" in answers[-1].text
    assert [p.status_code for p in probes] == [401, 401]
    assert probes[0].json()["detail"] == probes[1].json()["detail"].replace("private", "nope")
    assert [p.status_code for p in tests_pages] == [200] * 6
    assert len({p.text for p in tests_pages}) == 1
    print(
        f"/-/tests, {TESTS * DAYS:,} runs: first GET {first_db * 1000:.0f} ms of PostgreSQL, "
        f"{first_serve * 1000:.0f} ms of serve; 5 cached GETs {cached_db * 1000:.0f} ms "
        f"and {cached_serve * 1000:.0f} ms in all"
    )
    # 10 ms clock ticks: 5 cached GETs, the repository's look-up each
    assert cached_db < 0.02 and cached_serve < 0.1, (cached_db, cached_serve, first_db)
    assert first_db > cached_db, (first_db, first_serve, cached_db)
    # the summary both GETs answered with, computed by the first, kept for the TTL
    client = redis.Redis.from_url(env["REDIS_URL"])
    try:
        assert client.ttl(summary_cache_key(env["COVWORKER_NAMESPACE"], 1)) > 500
    finally:
        client.close()
