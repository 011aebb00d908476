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
- ``/-/tests`` is computed once, then served from Redis while fresh.
"""

from __future__ import annotations

import gzip
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


def body(slug: str, **changes: object) -> dict[str, object]:
    return {"slug": slug, "commit": SHA, "service": "github", "name": "py311", **changes}


def wait_until_ready(log: Path, timeout_s: float = 120) -> None:
    """Until the worker process has started (its imports are not the upload's cost)."""
    deadline = time.monotonic() + timeout_s
    while b"Worker process is ready for action" not in log.read_bytes():
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.1)


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
            tests_pages = [http.get("/-/tests/acme/web") for _ in range(2)]

        engine = sa.create_engine(db_url)
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
    assert [p.status_code for p in tests_pages] == [200, 200]
    # the summary both GETs answered with, computed by the first, kept for the TTL
    client = redis.Redis.from_url(env["REDIS_URL"])
    try:
        assert client.ttl(summary_cache_key(env["COVWORKER_NAMESPACE"], 1)) > 500
    finally:
        client.close()
