"""What hostile HTTP requests cost a real ``covworker serve`` (one process).

Starts ``covworker serve`` on a fresh PostgreSQL database and the shared
Redis, adds a private repository and a public one whose commit holds one
file of ``--file-lines`` instrumented lines, then sends each hostile request
and reads the server process's CPU time (``/proc/PID/stat``) and peak
resident memory (``VmHWM``, reset before each case through
``/proc/PID/clear_refs``). Per case: requests sent, the answer, CPU per
request, and the peak memory above the resident size before the case.
``/healthz`` is polled during the streamed bodies; its latency is reported.

Target: no unauthenticated request costs more than 1 MiB of server memory
or 10 ms of server CPU.

    python benchmarks/hostile_requests.py --file-lines 1000000
    python benchmarks/hostile_requests.py --file-lines 1000000 --file-page-only
    python benchmarks/hostile_requests.py --pull-surface [--tree ../old]
    python benchmarks/hostile_requests.py --file-lines 1000 --provider-only [--tree ../old]

``--pull-surface`` measures the pages and routes added for pull requests
and test results instead (``benchmarks/hostile_pull_surface.py``): ``/-/tests``
at 1.6 million runs, the file page of a 1 MiB source, ``test_results/v1``
without ``service``, and its per-commit slot cap.

``--provider-only``: a fake GitHub (``tests/support/fake_github.py``)
serves the big file's source at each commit, 20 MiB of it, and
``codecov.yml``-sized reads are what the page's provider read costs: the
first GET of each commit's file page (the source is then cached per
commit), and a GET whose path climbs out of the repository
(``../../../victim/private/secret.py``: the fake counts any call below
``/repos/victim/``). ``--tree`` serves from another checkout (the previous
main, say) to compare.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
import tracemalloc
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

import sqlalchemy as sa
from sqlalchemy.orm import Session

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.coverage import FileCoverage, Report, codec
from app.coverage.limits import ParseLimits
from app.db.models import Commit, CommitReport, Repository
from app.merge.file_lines import store_file_lines
from app.web.reports import ReportCache
from benchmarks import hostile_pull_surface
from tests.support.fake_github import FakeGitHub
from tests.support.processes import covworker_serve
from tests.support.services import delete_namespace, scratch_database

MIB = 1024 * 1024
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime + stime


def status_kib(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise KeyError(key)


def raw_request(url: str, head: bytes, body_chunks: int = 0, chunk: bytes = b"") -> int:
    """Send ``head`` (and a chunked body of ``body_chunks`` chunks, stopping
    once the server answers); the status answered."""
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=60) as sock:
        sock.sendall(head)
        sock.settimeout(0.2)
        answer = b""
        try:
            for _ in range(body_chunks):
                sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                try:
                    answer = sock.recv(65536)
                    if answer:
                        break
                except TimeoutError:
                    continue
        except (BrokenPipeError, ConnectionResetError):
            pass
        sock.settimeout(60)
        while b"\r\n" not in answer:
            got = sock.recv(65536)
            if not got:
                break
            answer += got
    return int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/") else 0


def get(url: str) -> tuple[int, int]:
    try:
        with urllib.request.urlopen(url, timeout=300) as reply:
            return reply.status, len(reply.read())
    except urllib.error.HTTPError as exc:
        return exc.code, len(exc.read())


class Probe:
    """``/healthz`` polled in a thread; its latencies (ms)."""

    def __init__(self, url: str) -> None:
        self.url, self.latencies, self.stop = url, list[float](), threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        while not self.stop.is_set():
            started = time.perf_counter()
            get(f"{self.url}/healthz")
            self.latencies.append((time.perf_counter() - started) * 1000)

    def __enter__(self) -> Probe:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


def measure(pid: int, label: str, repeat: int, action: Callable[[], object]) -> dict[str, object]:
    Path(f"/proc/{pid}/clear_refs").write_text("5")  # VmHWM := VmRSS
    rss_before, cpu_before = status_kib(pid, "VmRSS"), cpu_s(pid)
    answers = {action() for _ in range(repeat)}
    cpu_ms = (cpu_s(pid) - cpu_before) * 1000 / repeat
    peak_mib = (status_kib(pid, "VmHWM") - rss_before) / 1024
    return {
        "case": label,
        "requests": repeat,
        "answer": ", ".join(str(a) for a in sorted(answers, key=str)),
        "cpu_ms": cpu_ms,
        "peak_mib": peak_mib,
    }


def commit_shas(copies: int) -> list[tuple[str, bool]]:
    """``copies`` commits whose lines are stored in windows, then as many without."""
    return [(f"{i:x}".rjust(40, "b"), True) for i in range(copies)] + [
        (f"{i:x}".rjust(40, "c"), False) for i in range(copies)
    ]


def store_big_file(database_url: str, lines: int, copies: int = 1) -> None:
    """The public repository's commits, each one file of ``lines`` lines:
    ``copies`` merged as the merge pass stores it today (the report and its
    lines in windows, ``app.merge.file_lines``), ``copies`` as a version merged
    before the windows existed (the report alone: the page decodes it)."""
    report = Report()
    report.files["src/big.py"] = FileCoverage({n: n % 3 for n in range(1, lines + 1)})
    blob = codec.dump(report)
    engine = sa.create_engine(database_url)
    with Session(engine) as session, session.begin():
        repo = Repository(name="bench/big", service="github")
        session.add(repo)
        session.flush()
        for sha, windows in commit_shas(copies):
            commit = Commit(repository_id=repo.id, sha=sha)
            session.add(commit)
            session.flush()
            row = CommitReport(
                commit_id=commit.id, version=1, report=blob, totals=report.totals().to_dict()
            )
            session.add(row)
            session.flush()
            if windows:
                store_file_lines(session, row, codec.load_part(blob).files)
    engine.dispose()


def file_page_cases(url: str, pid: int, lines: int, copies: int) -> list[dict[str, object]]:
    """The first GET of a window of the big file, for versions whose lines
    are stored in windows and for versions merged before (decoded from the
    report), side by side: one GET per commit, each the first of its
    version; then later GETs, and first GETs of a window in the middle."""
    rows: list[dict[str, object]] = []
    sizes: list[int] = []
    shas = commit_shas(copies)

    def getter(stored: bool, start: int) -> Callable[[], int]:
        todo = iter([sha for sha, windows in shas if windows == stored] * 10)

        def file_page() -> int:
            path = f"/bench/big/commit/{next(todo)}/file/src/big.py?from={start}"
            status, size = get(url + path)
            sizes.append(size)
            return status

        return file_page

    middle = lines // 2 + 1
    for stored, how in ((False, "decoded from the report"), (True, "stored windows")):
        name = f"file page, {lines:,} lines, {how}"
        rows.append(measure(pid, f"{name}, first GET", copies, getter(stored, 1)))
        rows.append(measure(pid, f"{name}, later GETs", copies, getter(stored, 1)))
        rows.append(
            measure(pid, f"{name}, GETs from line {middle:,}", copies, getter(stored, middle))
        )
    rows.append({"case": "file page HTML per GET (bytes)", "answer": max(sizes)})
    return rows


def window_reads(database_url: str, lines: int, copies: int) -> list[dict[str, object]]:
    """The same first reads in this process, without HTTP or rendering:
    ``ReportCache.file_window`` on a new cache (the first read of a version),
    its CPU (``time.process_time``, finer than the server's 10 ms ticks) and
    the peak of memory it allocates (``tracemalloc``, a second run)."""
    engine = sa.create_engine(database_url)
    out: list[dict[str, object]] = []
    with Session(engine) as session:
        for stored, how in ((False, "decoded from the report"), (True, "stored windows")):
            ids = [
                session.scalar(sa.select(Commit.id).where(Commit.sha == sha))
                for sha, windows in commit_shas(copies)
                if windows == stored
            ]
            spent, peaks = [], []
            for trace in (False, True):
                for commit_id in ids:
                    assert commit_id is not None
                    cache = ReportCache(ParseLimits())
                    if trace:
                        tracemalloc.start()
                    started = time.process_time()
                    window = cache.file_window(session, commit_id, "src/big.py", lines // 2, 500)
                    if trace:
                        peaks.append(tracemalloc.get_traced_memory()[1] / MIB)
                        tracemalloc.stop()
                    else:
                        spent.append((time.process_time() - started) * 1000)
                    assert window is not None and len(window.lines) == 500
            out.append(
                {
                    "case": f"in-process first read of a window (median), {lines:,} lines, {how}",
                    "requests": len(ids),
                    "answer": "500 lines",
                    "cpu_ms": statistics.median(spent),
                    "peak_mib": max(peaks),
                }
            )
    engine.dispose()
    return out


#: The provider's source of the big file, per commit (``--provider-only``).
SOURCE_BYTES = 20 * MIB


def provider_cases(
    url: str, pid: int, fake: FakeGitHub, database_url: str, namespace: str, redis_url: str
) -> list[dict[str, object]]:
    """First GETs of file pages whose source the provider holds (20 MiB each),
    and a page whose path climbs out of the repository."""
    import redis

    shas = [sha for sha, windows in commit_shas(3) if windows]
    source = b"x = 1\n" * (SOURCE_BYTES // 6)
    for sha in shas:
        fake.add_file("bench/big", sha, "src/big.py", source)
    fake.add_file("victim/private", shas[0], "secret.py", b"API_KEY = 1\n")
    left = iter(shas)
    rows = [
        measure(
            pid,
            f"file page, first GET, {SOURCE_BYTES // MIB} MiB source at the provider",
            len(shas),
            lambda: get(f"{url}/bench/big/commit/{next(left)}/file?path=src/big.py")[0],
        )
    ]
    climbing = "../../../victim/private/secret.py"
    rows.append(
        measure(
            pid,
            "file page whose path climbs out of the repository",
            3,
            lambda: get(f"{url}/bench/big/commit/{shas[0]}/file?path={climbing}")[0],
        )
    )
    client = redis.Redis.from_url(redis_url)
    try:
        cached = sum(client.strlen(k) for k in client.scan_iter(f"{namespace}:source:*"))
    finally:
        client.close()
    victim_calls = len(fake.calls(contains="/repos/victim/"))
    # covworker hanging up on an answer past its bound: the fake's write fails
    cut = [e for e in fake.errors if isinstance(e, (BrokenPipeError, ConnectionResetError))]
    fake.errors[:] = [e for e in fake.errors if e not in cut]
    rows.append(
        {
            "case": "what the provider reads left behind",
            "answer": f"source cache {cached:,} bytes in Redis; {len(cut)} answer(s) cut off "
            f"by covworker; {victim_calls} call(s) below /repos/victim/",
        }
    )
    return rows


def run(args: argparse.Namespace) -> list[dict[str, object]]:
    """Every case, on a database and a Redis namespace of the run's own
    (dropped and deleted after)."""
    namespace = f"bench-{uuid.uuid4().hex[:8]}"
    with scratch_database(args.admin_database_url, "covworker_bench_") as database_url:
        try:
            return cases(args, database_url, namespace)
        finally:
            delete_namespace(args.redis_url, namespace)


def cases(args: argparse.Namespace, database_url: str, namespace: str) -> list[dict[str, object]]:
    """Migrate ``database_url``, store the big file, start ``covworker serve``
    on it and ``namespace``, and measure each case against it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("COVWORKER_")}
    env.update(REDIS_URL=args.redis_url, DATABASE_URL=database_url, COVWORKER_NAMESPACE=namespace)
    cli = [sys.executable, "-m", "app.cli.main"]
    rows: list[dict[str, object]] = []
    subprocess.run([*cli, "db", "upgrade"], env=env, check=True, capture_output=True)
    subprocess.run(
        [*cli, "repo", "add", "acme/secret", "--private"],
        env=env,
        check=True,
        capture_output=True,
    )
    store_big_file(database_url, args.file_lines, args.first_gets)
    if args.provider_only:
        with FakeGitHub() as fake:
            env.update(COVWORKER_GITHUB_TOKEN="ghp_bench", COVWORKER_GITHUB_API_URL=fake.url)
            with covworker_serve(env, Path(args.log), cwd=args.tree) as served:
                return provider_cases(
                    served.url, served.pid, fake, database_url, namespace, args.redis_url
                )
    with covworker_serve(env, Path(args.log)) as served:
        url, pid = served.url, served.pid
        if args.file_page_only:
            rows = file_page_cases(url, pid, args.file_lines, args.first_gets)
            return rows + window_reads(database_url, args.file_lines, args.first_gets)
        upload = b"POST /upload/github/acme::::secret/upload-coverage HTTP/1.1\r\nHost: x\r\n"
        rows.append(
            measure(
                pid,
                "upload-coverage, 100 MiB declared, no token",
                20,
                lambda: raw_request(
                    url,
                    upload + b"Content-Type: application/json\r\n"
                    b"Content-Length: %d\r\n\r\n" % (100 * MIB),
                ),
            )
        )
        chunked = b"Transfer-Encoding: chunked\r\n\r\n"
        with Probe(url) as probe:  # apart: its own requests would count as the cases' CPU
            for _ in range(3):
                raw_request(
                    url, upload + b"Authorization: token nope\r\n" + chunked, 60, b"[" * MIB
                )
        healthz = probe.latencies
        rows.append(
            measure(
                pid,
                "upload-coverage, 60 MiB streamed, wrong token",
                3,
                lambda: raw_request(
                    url,
                    upload + b"Authorization: token nope\r\n" + chunked,
                    60,
                    b"[" * MIB,
                ),
            )
        )
        rows.append(
            measure(
                pid,
                "/-/login, 100 MiB token streamed",
                3,
                lambda: raw_request(
                    url,
                    b"POST /-/login HTTP/1.1\r\nHost: x\r\n" + chunked,
                    100,
                    b"t" * MIB,
                ),
            )
        )
        long_name = "n" * 8000
        for round_ in range(1, 5):
            rows.append(
                measure(
                    pid,
                    f"1,000 POSTs to unknown 8 KB names, round {round_}",
                    1000,
                    lambda: raw_request(
                        url,
                        f"POST /upload/github/acme::::{long_name}{uuid.uuid4().hex}/commits "
                        "HTTP/1.1\r\nHost: x\r\nAuthorization: token nope\r\n"
                        "Content-Length: 0\r\n\r\n".encode(),
                    ),
                )
            )
        rows.append(measure(pid, "GET a URL with %00", 50, lambda: get(f"{url}/acme/we%00b")[0]))
        rows.append(
            measure(
                pid,
                "GET commits?offset=10^23",
                50,
                lambda: get(f"{url}/api/v1/repos/bench/big/commits?offset={10**23}")[0],
            )
        )
        rows += file_page_cases(url, pid, args.file_lines, args.first_gets)
        rows.append(
            {
                "case": "/healthz during the streamed bodies",
                "answer": f"{len(healthz)} probes, p50 {statistics.median(healthz):.1f} ms, "
                f"max {max(healthz):.1f} ms",
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file-lines", type=int, default=1_000_000)
    parser.add_argument(
        "--first-gets", type=int, default=5, help="commits per way of storing the big file"
    )
    parser.add_argument(
        "--file-page-only", action="store_true", help="only the file page's cases (a minute)"
    )
    parser.add_argument(
        "--provider-only", action="store_true", help="only the provider reads' cases"
    )
    parser.add_argument(
        "--tree", type=Path, help="serve from this checkout (--provider-only, --pull-surface)"
    )
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    parser.add_argument(
        "--admin-database-url", default="postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
    )
    parser.add_argument("--log", default="/tmp/covworker-hostile-serve.log")
    parser.add_argument("--pull-surface", action="store_true", help="the second round's cases")
    hostile_pull_surface.add_arguments(parser, tree=False)
    args = parser.parse_args()
    if args.pull_surface:
        print(f"load average at start: {os.getloadavg()[0]:.2f}; tree {args.tree}")
        hostile_pull_surface.print_rows(hostile_pull_surface.run(args))
        return
    started = time.time()
    rows = run(args)
    print(f"load average at start: {os.getloadavg()[0]:.2f}; took {time.time() - started:.0f} s")
    print("| case | requests | answer | server CPU per request | peak memory above start |")
    print("|---|---:|---|---:|---:|")
    for r in rows:
        cpu = f"{r['cpu_ms']:.2f} ms" if "cpu_ms" in r else ""
        peak = f"{r['peak_mib']:.2f} MiB" if "peak_mib" in r else ""
        print(f"| {r['case']} | {r.get('requests', '')} | {r['answer']} | {cpu} | {peak} |")


if __name__ == "__main__":
    main()
