"""What the second round of hostile requests costs a real ``covworker serve``:
the pages and routes added for pull requests and test results.

Part of ``benchmarks/hostile_requests.py`` (``--pull-surface``), or alone:

    python benchmarks/hostile_pull_surface.py
    python benchmarks/hostile_pull_surface.py --tree /tmp/old-main   # another checkout's serve

Starts ``covworker serve`` (from ``--tree``: the previous main, say, for
the figures before) on a fresh PostgreSQL database and the shared Redis,
with an in-process fake GitHub (``tests/support/fake_github.py``) as its
provider, and measures, per case: the answer, the server's CPU per request
(``/proc/PID/stat``), its peak resident memory above the start of the case
(``VmHWM`` reset through ``clear_refs``), the bytes answered, and for
``/-/tests`` the CPU time of the PostgreSQL backends serving the database
(their ``/proc/PID/stat``: the database's own work).

- ``/-/tests`` of a public repository with 1.6 million runs (20,000 tests x
  80 days of daily history, 1,000 of them failing now and then), GET 10
  times by anonymous readers;
- the file page of a 1 MiB source of newlines with one instrumented line;
- ``test_results/v1`` without ``service`` for an unknown repository and a
  known one (the answers, side by side);
- 1,001 ``test_results/v1`` creates of one commit (the per-commit slot cap).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from datetime import date, timedelta
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.orm import Session

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.coverage import FileCoverage, Report, codec
from app.db.models import Commit, CommitReport, Repository
from app.merge.file_lines import store_file_lines
from tests.support.fake_github import FakeGitHub
from tests.support.processes import covworker_serve
from tests.support.services import delete_namespace, scratch_database

MIB = 1024 * 1024
TICKS = os.sysconf("SC_CLK_TCK")
ROOT = Path(__file__).resolve().parents[1]
SHA = "e" * 40
#: The source of the file page's case: 1 MiB of newlines, one line of code last.
SOURCE = b"\n" * (MIB - 6) + b"x = 1"


def cpu_s(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICKS


def status_kib(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise KeyError(key)


def request(url: str, body: dict[str, object] | None = None, token: str = "") -> tuple[int, bytes]:
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Content-Type": "application/json"} if body is not None else {}
    if token:
        headers["Authorization"] = f"token {token}"
    req = urllib.request.Request(url, data=data, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=600) as reply:
            return reply.status, reply.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def backends(engine: sa.Engine) -> list[int]:
    """The PostgreSQL backends connected to the database (the server's pool)."""
    with engine.connect() as conn:
        return list(
            conn.scalars(
                sa.text(
                    "SELECT pid FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )
            )
        )


def measure(
    pid: int, engine: sa.Engine, label: str, repeat: int, action: Callable[[], tuple[int, bytes]]
) -> dict[str, object]:
    Path(f"/proc/{pid}/clear_refs").write_text("5")
    rss, cpu, started = status_kib(pid, "VmRSS"), cpu_s(pid), time.perf_counter()
    db_before = {p: cpu_s(p) for p in backends(engine)}
    answers, sizes = set(), []
    for _ in range(repeat):
        status, body = action()
        answers.add(status)
        sizes.append(len(body))
    db = sum(cpu_s(p) - db_before.get(p, 0.0) for p in backends(engine))
    return {
        "case": label,
        "requests": repeat,
        "answer": ", ".join(str(a) for a in sorted(answers)),
        "cpu_ms": (cpu_s(pid) - cpu) * 1000 / repeat,
        "db_ms": db * 1000 / repeat,
        "wall_ms": (time.perf_counter() - started) * 1000 / repeat,
        "peak_mib": (status_kib(pid, "VmHWM") - rss) / 1024,
        "bytes": max(sizes),
    }


def seed(database_url: str, tests: int, days: int) -> None:
    """bench/tests: ``tests`` x ``days`` runs of daily history; bench/src: one
    file whose only instrumented line is the last of ``SOURCE``."""
    engine = sa.create_engine(database_url)
    with Session(engine) as session, session.begin():
        repo = Repository(name="bench/tests", service="github")
        src = Repository(name="bench/src", service="github")
        session.add_all([repo, src])
        session.flush()
        today = date.today()
        session.execute(
            sa.text(
                "INSERT INTO tests (repository_id, test_key, suite, name, flags, job, created_at) "
                "SELECT :repo, k, 'tests.test_mod' || (k % 100), 'test_case_' || k, '', '', now() "
                "FROM generate_series(1, :tests) AS k"
            ),
            {"repo": repo.id, "tests": tests},
        )
        session.execute(
            sa.text(
                "INSERT INTO test_daily (repository_id, test_key, day, default_branch, runs, "
                "passed, failed, skipped, flaky, duration_sum) "
                "SELECT :repo, k, :first + d, true, 1, f, 1 - f, 0, 0, (k % 97) / 10.0 "
                "FROM generate_series(1, :tests) AS k, generate_series(0, :days - 1) AS d, "
                "LATERAL (SELECT CASE WHEN k % 20 = 0 AND d % 3 = 0 THEN 0 ELSE 1 END AS f) s"
            ),
            {"repo": repo.id, "tests": tests, "days": days, "first": today - timedelta(days=days)},
        )
        commit = Commit(repository_id=src.id, sha=SHA)
        session.add(commit)
        session.flush()
        lines = SOURCE.count(b"\n") + 1
        report = Report({"src/big.py": FileCoverage({lines - 1: 1})})
        blob = codec.dump(report)
        row = CommitReport(
            commit_id=commit.id, version=1, report=blob, totals=report.totals().to_dict()
        )
        session.add(row)
        session.flush()
        store_file_lines(session, row, codec.load_part(blob).files)
    with engine.begin() as conn:
        conn.execute(sa.text("ANALYZE"))
    engine.dispose()


def cases(args: argparse.Namespace, database_url: str, namespace: str) -> list[dict[str, object]]:
    tree = Path(args.tree or ROOT).resolve()
    env = {k: v for k, v in os.environ.items() if not k.startswith("COVWORKER_")}
    env.update(REDIS_URL=args.redis_url, DATABASE_URL=database_url, COVWORKER_NAMESPACE=namespace)
    cli = [sys.executable, "-m", "app.cli.main"]
    subprocess.run([*cli, "db", "upgrade"], env=env, check=True, capture_output=True, cwd=tree)
    added = subprocess.run(
        [*cli, "repo", "add", "acme/known", "--private"],
        env=env, check=True, capture_output=True, text=True, cwd=tree,
    )  # fmt: skip
    token = added.stdout.strip().split()[-1]
    seed(database_url, args.tests, args.days)
    engine = sa.create_engine(database_url)
    rows: list[dict[str, object]] = []
    with FakeGitHub() as github:
        github.add_file("bench/src", SHA, "src/big.py", SOURCE)
        env.update(COVWORKER_GITHUB_TOKEN="ghp_bench", COVWORKER_GITHUB_API_URL=github.url)
        with covworker_serve(env, Path(args.log), cwd=tree) as served:
            url, pid = served.url, served.pid
            runs = args.tests * args.days
            tests_page = f"{url}/-/tests/bench/tests"
            for which, repeat in (("first GET", 1), ("the GETs after it", args.repeat - 1)):
                rows.append(
                    measure(
                        pid, engine, f"/-/tests, {runs:,} runs, anonymous, {which}", repeat,
                        lambda: request(tests_page),
                    )
                )  # fmt: skip
            page = f"{url}/bench/src/commit/{SHA}/file/src/big.py"
            rows.append(
                measure(
                    pid, engine, "file page, 1 MiB of newlines, one instrumented line", 3,
                    lambda: request(page),
                )
            )  # fmt: skip
            body = {"commit": "a" * 40, "service": None, "report_payload_bytes": 10}
            for slug in ("acme::::nope", "acme::::known"):
                status, answer = request(
                    f"{url}/upload/test_results/v1", {**body, "slug": slug}, token="not-it"
                )
                rows.append(
                    {"case": f"test_results/v1 without service, {slug}", "answer": f"{status}",
                     "body": answer.decode()[:160]}
                )  # fmt: skip
            statuses: dict[int, int] = {}
            for _ in range(1001):
                status, _ = request(
                    f"{url}/upload/test_results/v1", {**body, "slug": "acme::::known"}, token
                )
                statuses[status] = statuses.get(status, 0) + 1
            rows.append(
                {"case": "1,001 test_results/v1 creates of one commit", "answer": str(statuses)}
            )
    engine.dispose()
    return rows


def run(args: argparse.Namespace) -> list[dict[str, object]]:
    namespace = f"bench-{uuid.uuid4().hex[:8]}"
    with scratch_database(args.admin_database_url, "covworker_bench_") as database_url:
        try:
            return cases(args, database_url, namespace)
        finally:
            delete_namespace(args.redis_url, namespace)


def add_arguments(parser: argparse.ArgumentParser, *, tree: bool = True) -> None:
    """This benchmark's options (``tree``: with ``--tree``, the checkout served)."""
    if tree:
        parser.add_argument("--tree", help="the checkout whose serve is measured (this one)")
    parser.add_argument("--tests", type=int, default=20_000)
    parser.add_argument("--days", type=int, default=80)
    parser.add_argument("--repeat", type=int, default=10, help="GETs of /-/tests")


def print_rows(rows: list[dict[str, object]]) -> None:
    print("| case | requests | answer | server CPU | DB CPU | wall | peak RSS | bytes |")
    print("|---|---:|---|---:|---:|---:|---:|---:|")
    for r in rows:
        if "cpu_ms" not in r:
            print(f"| {r['case']} | 1 | {r['answer']} {r.get('body', '')} | | | | | |")
            continue
        print(
            f"| {r['case']} | {r['requests']} | {r['answer']} | {r['cpu_ms']:.0f} ms "
            f"| {r['db_ms']:.0f} ms | {r['wall_ms']:.0f} ms | {r['peak_mib']:.1f} MiB "
            f"| {r['bytes']:,} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(parser)
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    parser.add_argument(
        "--admin-database-url", default="postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
    )
    parser.add_argument("--log", default="/tmp/covworker-hostile-pull-serve.log")
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f}; tree {args.tree}")
    print_rows(run(args))


if __name__ == "__main__":
    main()
