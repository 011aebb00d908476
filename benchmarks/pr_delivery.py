"""Benchmark: from a commit's notification to its pull request's statuses and comment.

Not a test: it measures, it does not assert. ``--commits`` pull requests
(default 50), each a commit of ``--uploads`` uploads (default 20, a CI
matrix), are uploaded at once to real ``dramatiq app.actors`` workers on
real Redis and PostgreSQL; a local fake GitHub (tests/support/fake_github.py,
without Prism: only covworker's side is timed) answers every call after
``--latency-ms`` (default 50). For each commit it reports the time from
its notification row's ``created_at`` to the arrival of its first status
and of its comment at the provider (p50, p95, max), and the provider calls
per settled version, by kind.

    python benchmarks/pr_delivery.py [--commits 50] [--uploads 20] [--latency-ms 50]

Uses ``COVWORKER_TEST_REDIS_URL`` / ``COVWORKER_TEST_DATABASE_URL`` (default
the local servers); a fresh database and a namespace of its own, both
removed afterwards.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.db.migrate import upgrade
from app.db.models import Commit, Notification, PullDelivery
from app.ingest.accept import accept_uploads
from app.runtime.worker import build_app
from app.settings import Settings
from tests.support.fake_github import FakeGitHub, FakePull
from tests.support.processes import dramatiq_workers, service_env
from tests.support.services import fresh_database, redis_test_url
from tests.support.synthetic import ci_matrix

REPO = "bench/service"
PATCH = "@@ -1,3 +1,6 @@\n line\n+added\n+added\n+added\n line\n line\n"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commits", type=int, default=50)
    parser.add_argument("--uploads", type=int, default=20)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument(
        "--spacing-ms",
        type=float,
        default=0.0,
        help="pause between commits (0: all at once, a burst of commits x uploads)",
    )
    args = parser.parse_args()
    namespace = f"bench-pr-{uuid.uuid4().hex[:8]}"
    log = Path(os.environ.get("TMPDIR", "/tmp")) / f"{namespace}-worker.log"
    with FakeGitHub() as fake, fresh_database() as db_url:
        fake.state.latency_s = args.latency_ms / 1000
        env = service_env(
            redis_test_url(),
            db_url,
            namespace,
            COVWORKER_GITHUB_TOKEN="ghp_bench",
            COVWORKER_GITHUB_API_URL=fake.url,
            COVWORKER_PUBLIC_URL="http://cov.example",
        )
        upgrade(db_url)
        settings = Settings(
            redis_url=redis_test_url(),
            database_url=db_url,
            namespace=namespace,
            github_token="ghp_bench",
            github_api_url=fake.url,
        )
        app = build_app(settings)
        from app import actors  # declared on ``app``

        base_sha = "b" * 40
        heads = [f"{n + 1:040x}" for n in range(args.commits)]
        for n, sha in enumerate(heads, start=1):
            fake.add_pull(REPO, FakePull(n, base_sha, "main", sha, f"feature-{n}"))
            fake.add_diff(REPO, base_sha, sha, [("src/pkg/module_000.py", "modified", PATCH)])
        try:
            with dramatiq_workers(env, log, processes=args.processes, threads=args.threads):
                base = accept_uploads(app.services, REPO, base_sha, ci_matrix(2))
                for upload_id in base.upload_ids:
                    actors.upload_processor.send(upload_id)
                wait_notified(app, [base_sha], timeout_s=120)
                fake.state.requests.clear()
                started = time.perf_counter()
                for n, sha in enumerate(heads):
                    accepted = accept_uploads(
                        app.services, REPO, sha, ci_matrix(args.uploads, first_job=n)
                    )
                    for upload_id in accepted.upload_ids:
                        actors.upload_processor.send(upload_id)
                    time.sleep(args.spacing_ms / 1000)
                wait_delivered(app, heads, timeout_s=600)
                elapsed = time.perf_counter() - started
            report(app, fake, heads, args, elapsed)
        finally:
            keys = list(app.services.redis.scan_iter(f"{namespace}*"))
            if keys:
                app.services.redis.delete(*keys)
            app.close()


def wait_notified(app, shas: list[str], timeout_s: float) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while True:
        with app.services.sessions() as session:
            done = session.scalar(
                sa.select(sa.func.count(sa.distinct(Notification.commit_id)))
                .join(Commit)
                .where(Commit.sha.in_(shas))
            )
        if done == len(shas):
            return
        if time.monotonic() > deadline:
            raise SystemExit(f"only {done} of {len(shas)} commits notified in {timeout_s} s")
        time.sleep(0.2)


def wait_delivered(app, shas: list[str], timeout_s: float) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while True:
        with app.services.sessions() as session:
            states = Counter(
                session.scalars(
                    sa.select(PullDelivery.state).join(Commit).where(Commit.sha.in_(shas))
                )
            )
            prepared = session.scalar(
                sa.select(sa.func.count())
                .select_from(PullDelivery)
                .join(Commit)
                .where(Commit.sha.in_(shas), PullDelivery.target == "prepare")
            )
        if prepared and prepared >= len(shas) and not states.get("pending"):
            return
        if time.monotonic() > deadline:
            raise SystemExit(f"deliveries not done in {timeout_s} s: {dict(states)}")
        time.sleep(0.2)


def report(app, fake: FakeGitHub, heads: list[str], args, elapsed: float) -> None:  # type: ignore[no-untyped-def]
    with app.services.sessions() as session:
        notified = {
            sha: (created.timestamp(), version)
            for sha, created, version in session.execute(
                sa.select(Commit.sha, Notification.created_at, Notification.report_version)
                .join(Commit)
                .where(Commit.sha.in_(heads))
            )
        }
        versions = session.scalar(
            sa.select(sa.func.count())
            .select_from(PullDelivery)
            .join(Commit)
            .where(Commit.sha.in_(heads), PullDelivery.target == "prepare")
        )
        states = Counter(
            session.scalars(sa.select(PullDelivery.state).join(Commit).where(Commit.sha.in_(heads)))
        )
        steps: dict[str, list[float]] = {"queued": [], "prepared": [], "written": []}
        for sha, target, created, sent in session.execute(
            sa.select(
                Commit.sha, PullDelivery.target, PullDelivery.created_at, PullDelivery.sent_at
            )
            .join(Commit)
            .where(Commit.sha.in_(heads))
        ):
            if sent is None:
                continue
            if target == "prepare":
                steps["queued"].append(created.timestamp() - notified[sha][0])
                steps["prepared"].append(sent.timestamp() - created.timestamp())
            else:
                steps["written"].append(sent.timestamp() - created.timestamp())
    first_status: dict[str, float] = {}
    comment: dict[str, float] = {}
    calls: Counter[str] = Counter()
    by_pull = {str(n): sha for n, sha in enumerate(heads, start=1)}
    for r in fake.state.requests:
        parts = r.path.split("/")
        if parts[-1] == "b" * 40 or parts[-2:] == ["b" * 40, "pulls"]:
            continue  # the base commit's own feedback
        if r.method == "POST" and "statuses" in parts:
            if r.body.get("state") == "pending":  # sent while uploads were in flight
                calls["status (pending)"] += 1
                continue
            first_status.setdefault(parts[-1], r.at)
            calls["status"] += 1
        elif r.method == "POST" and r.path.endswith("/comments"):
            comment.setdefault(by_pull[parts[-2]], r.at)
            calls["comment create"] += 1
        elif r.method == "PATCH":
            calls["comment edit"] += 1
        elif "/pulls" in r.path:
            calls["pull lookup"] += 1
        elif "/compare/" in r.path:
            calls["compare"] += 1
        elif "/contents/" in r.path:
            calls["contents (codecov.yml)"] += 1
    status_lat = [first_status[s] - notified[s][0] for s in heads if s in first_status]
    comment_lat = [comment[s] - notified[s][0] for s in heads if s in comment]
    load = os.getloadavg()
    print(
        f"{len(heads)} commits x {args.uploads} uploads, provider latency {args.latency_ms:g} ms, "
        f"{args.processes} worker processes x {args.threads} threads, "
        f"commits {args.spacing_ms:g} ms apart; "
        f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )
    print(f"all delivered {elapsed:.1f} s after the first upload; rows by state {dict(states)}")
    for name, values in (("first status", status_lat), ("comment", comment_lat)):
        if not values:
            print(f"{name}: none arrived")
            continue
        print(
            f"{name} after the notification row: n={len(values)} "
            f"p50 {statistics.median(values) * 1000:.0f} ms, "
            f"p95 {percentile(values, 0.95) * 1000:.0f} ms, max {max(values) * 1000:.0f} ms"
        )
    print(
        "medians: notification row -> prepare row "
        + ", ".join(
            f"{name} {statistics.median(v) * 1000:.0f} ms" for name, v in steps.items() if v
        )
    )
    print(f"settled versions: {versions}; provider calls per version:")
    for kind, n in sorted(calls.items()):
        print(f"  {kind}: {n / max(versions or 1, 1):.2f}")


if __name__ == "__main__":
    main()
