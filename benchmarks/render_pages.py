"""Rendering cost of the commit page and its JSON for a big report.

Builds two commits of FILES files x LINES lines each (the second names the
first as its parent, so the base comparison runs too), stores their merged
reports in a fresh SQLite file (or the PostgreSQL of ``--database-url``), and
requests the commit page and its JSON through the whole ASGI app in this
process. Server time is the wall time of one request, routing to the last
byte; the first request of a report version is shown apart from the steady
state, twice side by side: with the per-file totals and comparison the merge
stores (``app.merge.report_summary.summarise``, timed here as the merge runs it)
and without them, as for a version merged before they existed (the pages
then decode both reports). Each first request is sent to a new app (empty
caches) after one request to the repositories page.

The budgets of the pages a team opens every day are checked in CPU time of
this process (``time.process_time``: the server's threads included, and a
loaded machine's other work excluded) and in bytes: the repository page of a
year of daily commits (``--days`` settled commits on main, ``--flags`` flags
each: its chart of 365 points) and the commit page with the file tree of the
``--files``-file report, each under ``BUDGET_CPU_MS`` and ``BUDGET_BYTES``.

    python benchmarks/render_pages.py --files 20000 --lines 50 --repeat 30
"""

from __future__ import annotations

import argparse
import gzip
import random
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import fakeredis
import sqlalchemy as sa
from fastapi.testclient import TestClient

from app.api import create_app
from app.coverage import Branches, FileCoverage, Report, codec
from app.db.migrate import upgrade
from app.db.models import Commit, CommitFlagReport, CommitReport, Repository
from app.merge.report_summary import summarise
from app.runtime.services import Services
from app.runtime.worker import CovworkerApp, build_app
from app.settings import Settings

REPO = "bench/pages"
BASE, HEAD = "a" * 40, "b" * 40
#: The repository of a year of daily commits.
YEAR_REPO = "bench/year"
#: A page's budget: server CPU time (steady state, p50) and body size.
BUDGET_CPU_MS = 50.0
BUDGET_BYTES = 300 * 1000


def synthetic_report(files: int, lines: int, seed: int) -> Report:
    rng = random.Random(seed)
    report = Report()
    for f in range(files):
        hits = {ln: (0 if rng.random() < 0.25 else rng.randint(1, 9)) for ln in range(1, lines + 1)}
        branches = {ln: Branches(1, 2) for ln in range(5, lines + 1, 10) if hits[ln]}
        report.files[f"src/pkg{f // 100:03}/module_{f:05}.py"] = FileCoverage(hits, branches)
    return report


def store(services: Services, files: int, lines: int) -> None:
    with services.sessions.begin() as session:
        repo = Repository(name=REPO)
        session.add(repo)
        session.flush()
        for seed, sha, parent in ((1, BASE, None), (2, HEAD, BASE)):
            report = synthetic_report(files, lines, seed)
            commit = Commit(repository_id=repo.id, sha=sha, branch="main", parent_commit_id=parent)
            session.add(commit)
            session.flush()
            session.add(
                CommitReport(
                    commit_id=commit.id,
                    version=1,
                    report=codec.dump(report),
                    totals=report.totals().to_dict(),
                )
            )


def store_year(services: Services, days: int, flags: int) -> None:
    """``days`` settled commits of main, a day apart, each with ``flags``
    flags' totals, as the merge stores them (what the chart reads)."""
    rng = random.Random(3)
    start = datetime(2025, 1, 1, tzinfo=UTC)
    with services.sessions.begin() as session:
        repo = Repository(name=YEAR_REPO)
        session.add(repo)
        session.flush()
        previous = None
        for day in range(days):
            sha = f"{day:040x}"
            commit = Commit(
                repository_id=repo.id,
                sha=sha,
                branch="main",
                parent_commit_id=previous,
                created_at=start + timedelta(days=day),
            )
            session.add(commit)
            session.flush()
            lines = 10_000 + day
            hits = int(lines * (0.7 + 0.2 * rng.random()))
            totals = {"files": 100, "lines": lines, "hits": hits, "misses": lines - hits}
            totals |= {"partials": 0, "branches": 0, "coverage": round(100 * hits / lines, 5)}
            session.add(CommitReport(commit_id=commit.id, version=1, totals=totals))
            for f in range(flags):
                share = dict(totals, hits=hits // (f + 2), lines=lines // (f + 1))
                session.add(
                    CommitFlagReport(commit_id=commit.id, flag=f"flag{f}", totals=share, uploads=1)
                )
            previous = sha


def summarise_both(services: Services) -> list[float]:
    """What the merge pass stores, for the base then the head; seconds of CPU each."""
    spent = []
    for sha in (BASE, HEAD):
        with services.sessions.begin() as session:
            row = session.scalar(
                sa.select(CommitReport)
                .join(Commit, Commit.id == CommitReport.commit_id)
                .where(Commit.sha == sha)
            )
            assert row is not None and row.report is not None
            files = codec.load_part(row.report).files  # the pass holds these already
            started = time.process_time()
            summarise(session, row, files)
            spent.append(time.process_time() - started)
    return spent


def first_requests(settings: Settings, pipeline: CovworkerApp, paths: list[str]) -> list[float]:
    """Each path's first request on a new app (empty caches), in ms."""
    out = []
    for path in paths:
        with TestClient(create_app(settings, covworker=pipeline)) as client:
            timed(client, "/")  # the app and its templates, not the report version
            out.append(timed(client, path)[0])
    return out


def timed(client: TestClient, url: str) -> tuple[float, bytes]:
    start = time.perf_counter()
    reply = client.get(url)
    elapsed = time.perf_counter() - start
    assert reply.status_code == 200, (url, reply.status_code)
    return elapsed * 1000, reply.content


def cpu_timed(client: TestClient, url: str) -> tuple[float, bytes]:
    """The request's CPU time in this process (the server's threads and the
    test client's), in ms: what a loaded machine's other work does not inflate."""
    start = time.process_time()
    reply = client.get(url)
    spent = time.process_time() - start
    assert reply.status_code == 200, (url, reply.status_code)
    return spent * 1000, reply.content


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--lines", type=int, default=50, help="lines per file")
    parser.add_argument("--repeat", type=int, default=30, help="requests per case")
    parser.add_argument("--database-url", default="", help="default: a fresh SQLite file")
    parser.add_argument("--days", type=int, default=365, help="daily commits of the chart")
    parser.add_argument("--flags", type=int, default=5, help="flags of each daily commit")
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="render-pages-"))
    url = args.database_url or f"sqlite:///{tmp / 'pages.db'}"
    settings = Settings(redis_url="redis://unused", database_url=url)
    upgrade(settings.database_url)
    pipeline = build_app(settings, redis_client=fakeredis.FakeRedis())
    started = time.perf_counter()
    store(pipeline.services, args.files, args.lines)
    store_year(pipeline.services, args.days, args.flags)
    print(
        f"{args.files:,} files x {args.lines} lines = {args.files * args.lines:,} lines per "
        f"commit, stored in {time.perf_counter() - started:.1f} s ({url.split(':')[0]})"
    )
    cases = {
        "commit page (HTML)": f"/{REPO}/commit/{HEAD}",
        "commit page, sorted by change, desc": f"/{REPO}/commit/{HEAD}?sort=change&order=desc",
        "commit page, filtered": f"/{REPO}/commit/{HEAD}?q=module_1",
        "commit JSON": f"/api/v1/repos/{REPO}/commits/{HEAD}",
    }
    cold_paths = [cases["commit page (HTML)"], cases["commit JSON"]]
    before = first_requests(settings, pipeline, cold_paths)  # nothing stored: decode
    spent = summarise_both(pipeline.services)
    after = first_requests(settings, pipeline, cold_paths)
    print(
        f"stored at merge time (app.merge.report_summary.summarise): base {spent[0]:.3f} s, "
        f"head {spent[1]:.3f} s of CPU"
    )
    print("| first request of a new version | without the stored summary | with it |")
    print("|---|---:|---:|")
    for name, was, now in zip(("commit page (HTML)", "commit JSON"), before, after, strict=True):
        print(f"| {name} | {was:,.0f} ms | {now:,.0f} ms |")
    print()
    print("| request (steady state) | p50 | p95 | body | gzip |")
    print("|---|---:|---:|---:|---:|")
    with TestClient(create_app(settings, covworker=pipeline)) as client:
        for name, path in cases.items():
            times, body = [], b""
            for _ in range(args.repeat):
                ms, body = timed(client, path)
                times.append(ms)
            print(
                f"| {name} | {statistics.median(times):.1f} ms "
                f"| {percentile(times, 0.95):.1f} ms | {len(body) / 1024:.1f} KiB "
                f"| {len(gzip.compress(body)) / 1024:.1f} KiB |"
            )
        budgets(client, args)
    pipeline.close()


def budgets(client: TestClient, args: argparse.Namespace) -> None:
    """The daily pages against their budgets, in CPU time and bytes."""
    cases = {
        f"repository page, {args.days} daily commits x {args.flags} flags": f"/{YEAR_REPO}",
        "repository page, one flag's chart": f"/{YEAR_REPO}?flag=flag2",
        "coverage JSON (the chart's series)": f"/api/v1/repos/{YEAR_REPO}/coverage",
        f"commit page with the file tree of {args.files:,} files": f"/{REPO}/commit/{HEAD}",
        "commit page, the tree of one directory": f"/{REPO}/commit/{HEAD}?dir=src/pkg010",
    }
    print()
    print(
        f"| page (steady state) | CPU p50 | CPU p95 | body | budget "
        f"({BUDGET_CPU_MS:.0f} ms CPU, {BUDGET_BYTES // 1000} KB) |"
    )
    print("|---|---:|---:|---:|---|")
    for name, path in cases.items():
        times, body = [], b""
        for _ in range(args.repeat):
            ms, body = cpu_timed(client, path)
            times.append(ms)
        p50 = statistics.median(times)
        met = p50 < BUDGET_CPU_MS and len(body) < BUDGET_BYTES
        print(
            f"| {name} | {p50:.1f} ms | {percentile(times, 0.95):.1f} ms "
            f"| {len(body) / 1000:.1f} KB | {'met' if met else 'NOT MET'} |"
        )


if __name__ == "__main__":
    main()
