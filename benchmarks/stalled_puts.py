"""Benchmark: ``/healthz`` latency of ``covworker serve`` while 50 PUTs stall.

Not a test: it measures. On the Redis and PostgreSQL at ``REDIS_URL`` /
``DATABASE_URL`` (a database of its own is created and dropped), it starts
``covworker serve --workers 1`` (default pool and limits), creates
``--stalled`` uploads over ``--repos`` repositories, and opens one PUT per
upload that declares 8 MiB, sends 4 MiB + 1 byte and stops. While they
stall, it GETs ``/healthz`` ``--probes`` times, one after another, and
prints p50/p99/max, how the stalled PUTs were answered (408 once their
idle timeout ran out, or 429/503 at once for lack of a turn), and the
database's connections left idle in a transaction (none expected).

    REDIS_URL=redis://127.0.0.1:6379/0 \\
    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/covworker \\
        python benchmarks/stalled_puts.py [--stalled 50] [--repos 10] [--probes 500]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections import Counter
from contextlib import AbstractContextManager
from pathlib import Path

import httpx
from sqlalchemy.engine import make_url

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.db.migrate import upgrade
from app.settings import Settings
from tests.support.processes import covworker_serve
from tests.support.services import scratch_database
from tests.support.stalled_puts import create_put_url, idle_in_transaction, stall_many


def fresh_database(base_url: str) -> AbstractContextManager[str]:
    """A scratch database on the server of ``base_url`` (covworker's own)."""
    return scratch_database(make_url(base_url).set(database="postgres"), "covworker_stall_")


def add_repositories(env: dict[str, str], n: int) -> dict[str, str]:
    import subprocess

    tokens = {}
    for i in range(n):
        slug = f"stall/repo{i}"
        done = subprocess.run(
            [sys.executable, "-m", "app.cli.main", "repo", "add", slug],
            env=env, capture_output=True, text=True, check=True,
        )  # fmt: skip
        tokens[slug] = done.stdout.strip().splitlines()[-1]
    return tokens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stalled", type=int, default=50)
    parser.add_argument("--repos", type=int, default=10)
    parser.add_argument("--probes", type=int, default=500)
    args = parser.parse_args()
    base = Settings()
    with fresh_database(base.database_url) as db_url, tempfile.TemporaryDirectory() as tmp:
        upgrade(db_url)
        env = {k: v for k, v in os.environ.items() if not k.startswith("COVWORKER_")}
        env.update(
            REDIS_URL=base.redis_url,
            DATABASE_URL=db_url,
            COVWORKER_NAMESPACE=f"stall-{uuid.uuid4().hex[:8]}",
        )
        tokens = add_repositories(env, args.repos)
        with covworker_serve(env, Path(tmp) / "api.log", workers=1) as served:
            slugs = list(tokens)
            urls = [
                create_put_url(served.url, slug, tokens[slug], f"{i:040x}")
                for i in range(args.stalled)
                for slug in [slugs[i % len(slugs)]]
            ]
            with stall_many(urls, answered_within_s=120) as futures:
                time.sleep(3)  # let every stalled PUT send its bytes (a benchmark, not a test)
                latencies = []
                with httpx.Client(timeout=30) as client:
                    for _ in range(args.probes):
                        started = time.perf_counter()
                        assert client.get(f"{served.url}/healthz").status_code == 200
                        latencies.append(1000 * (time.perf_counter() - started))
                idle = idle_in_transaction(db_url, make_url(db_url).database or "")
                answers = Counter(f.result()[0] for f in futures)
    latencies.sort()
    p99 = latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))]
    print(f"stalled PUTs: {args.stalled} over {args.repos} repositories; answers {dict(answers)}")
    print(
        f"/healthz during the stall ({args.probes} probes): p50 "
        f"{statistics.median(latencies):.1f} ms, p99 {p99:.1f} ms, max {latencies[-1]:.1f} ms"
    )
    print(f"connections idle in transaction during the stall: {idle}")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
