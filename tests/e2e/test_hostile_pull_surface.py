"""Hostile input on the pull-request surface, end to end: a real ``covworker
serve``, real ``dramatiq app.actors`` workers, PostgreSQL and Redis, and the
fake GitHub behind Prism (GitHub's OpenAPI description).

- A report path climbing out of the repository
  (``../../../victim/private/contents/secret.py``) never makes the
  service's credential fetch another repository's file: the attacker's
  public file page does not show it, and GitHub is never asked below
  ``/repos/victim/``.
- A head whose ``codecov.yml`` is an alias bomb, nested thousands deep, or
  larger than 256 KiB still gets its statuses and one comment, on the first
  prepare, naming the problem in a line; the oversized file is read no
  further than the bound and only its refusal is kept (Redis, PostgreSQL).
  The worker's cost of the three, against an upload of one file before
  them: under 15 CPU-s and 100 MiB more at its peak (the 450-byte alias
  bomb alone took 36 CPU-s and +582 MiB, and made a 152 MB commit page: it
  is now under 200 KB and 2 CPU-s of ``serve`` a GET).
- A file path holding U+202E and ESC reaches the comment and the pages as
  escapes.
- ``ignore``, flag and status ``paths`` of ``^(a+)+$`` against paths of 32
  and 200 ``a`` and a ``b`` (a backtracking engine took 60 CPU-s at 30 and
  doubled each character, holding the GIL) cost the worker under 5 CPU-s
  for the whole upload, its comment included, and another repository's
  upload, sent after it, is merged meanwhile.
- The file page of a 1 MiB source of newlines with one instrumented line
  (one 118 MB page of 1,048,571 rows, 11.3 CPU-s and +232 MiB a GET) is
  1,000 rows a GET: under 200 KB, 1 CPU-s and 32 MiB more of ``serve``.
"""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest
import redis
import sqlalchemy as sa

from app.db.models import Commit, PullDelivery, Repository, Upload, UploadState
from tests.support.fake_github import GITHUB_SPEC, PRISM, FakeGitHub, FakePull, prism_proxy
from tests.support.processes import (
    add_repo,
    covworker_serve,
    dramatiq_workers,
    migrated_database,
    process_cost,
    reset_peak_rss,
)
from tests.support.services import redis_test_url, require_redis

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.integration,
    pytest.mark.timeout(600),
    pytest.mark.skipif(not PRISM.exists(), reason="Prism not installed (.ci/run)"),
]

ATTACKER, VICTIM = "acme/attacker", "victim/private"
SECRET = b"API_KEY = 'the victim's secret'\n"
CLIMBING = "../../../victim/private/contents/secret.py"
CLEANED = "victim/private/contents/secret.py"
EVIL = "src/evil\u202egnp.py\x1b[2J"
BASE = "b" * 40


def alias_bomb() -> bytes:
    """450 bytes naming 9**9 values (each list holds nine aliases of the one before)."""
    lines = ["l0: &l0 [" + ",".join(["lol"] * 9) + "]"]
    lines += [f"l{i}: &l{i} [" + ",".join([f"*l{i - 1}"] * 9) + "]" for i in range(1, 9)]
    return ("\n".join(lines) + "\nfixes: [*l8]\n").encode()


#: head SHA -> (its codecov.yml, the comment's error about it)
HEADS = {
    "1" * 40: (alias_bomb(), "its aliases expand to more than 262144 values"),
    "2" * 40: (b"coverage: " + b"[" * 5000 + b"]" * 5000 + b"\n", "nested deeper than 64 levels"),
    "3" * 40: (b"# " + b"x" * (2 * 1024 * 1024) + b"\n", "larger than 262144 bytes"),
}


MIB = 1024 * 1024


def lcov(*paths: str) -> bytes:
    records = "".join(f"SF:{path}\nDA:1,1\nDA:2,0\nend_of_record\n" for path in paths)
    return f"# path=coverage.info\n{records}<<<<<< EOF\n".encode()


def merged(engine: sa.Engine, count: int) -> bool:
    """Whether ``count`` uploads have ended (merged or failed)."""
    with engine.connect() as conn:
        done = conn.scalar(
            sa.select(sa.func.count())
            .select_from(Upload)
            .where(Upload.state.in_([UploadState.MERGED, UploadState.ERROR]))
        )
    return (done or 0) >= count


def wait_for(what: str, condition, timeout_s: float = 120.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def test_hostile_paths_and_codecov_yml_leak_nothing_and_never_silence_the_pull_request(
    tmp_path: Path, namespace: str
) -> None:
    require_redis()
    with FakeGitHub() as fake, prism_proxy(GITHUB_SPEC, fake.url, tmp_path / "prism.log") as gh:
        fake.add_file(VICTIM, "a" * 40, "secret.py", SECRET)
        for number, (head, (yml, _)) in enumerate(HEADS.items(), start=1):
            fake.add_file(ATTACKER, head, "codecov.yml", yml)
            fake.add_pull(ATTACKER, FakePull(number, BASE, "main", head, f"f{number}"))
            patch = "@@ -0,0 +1,2 @@\n+a\n+b\n"
            fake.add_diff(ATTACKER, BASE, head, [(EVIL, "added", patch)])
        with migrated_database(
            namespace,
            COVWORKER_GITHUB_TOKEN="ghp_e2e",
            COVWORKER_GITHUB_API_URL=gh.url,
            COVWORKER_PR_DELIVERY_MIN_BACKOFF_S="0.5",
            COVWORKER_PROVIDER_TIMEOUT_S="60",  # Prism on a loaded machine: no timeouts
        ) as (db_url, env):
            token = add_repo(env, ATTACKER)  # public: its pages need no token
            engine = sa.create_engine(db_url)
            log = tmp_path / "worker.log"
            try:
                with (
                    dramatiq_workers(env, log, processes=1, threads=4) as workers,
                    covworker_serve(env, tmp_path / "serve.log") as served,
                ):

                    def upload(sha: str, body: bytes, **params: str) -> None:
                        answer = httpx.post(
                            f"{served.url}/upload/v2",
                            params={"commit": sha, "token": token, "slug": ATTACKER, **params},
                            content=body,
                            timeout=60,
                        )
                        assert answer.status_code == 200, answer.text

                    upload("a" * 40, lcov(CLIMBING))
                    wait_for("the first upload merged", lambda: merged(engine, 1))
                    reset_peak_rss(workers.pid)
                    before = process_cost(workers.pid)
                    for number, head in enumerate(HEADS, start=1):
                        upload(head, lcov(EVIL), pr=str(number), branch=f"f{number}")

                    def delivered() -> bool:
                        with engine.connect() as conn:
                            states = conn.execute(
                                sa.select(PullDelivery.state).where(
                                    PullDelivery.target == "comment"
                                )
                            ).scalars()
                            done = [s for s in states if s != "pending"]
                        return len(done) >= len(HEADS)

                    wait_for("a comment on every pull request", delivered)
                    worker = process_cost(workers.pid)

                    shown = {}  # path asked for -> (API status, its source, the page)
                    for path in (CLIMBING, CLEANED):
                        api = httpx.get(
                            f"{served.url}/api/v1/repos/{ATTACKER}/commits/{'a' * 40}/file",
                            params={"path": path},
                            timeout=30,
                        )
                        page = httpx.get(
                            f"{served.url}/{ATTACKER}/commit/{'a' * 40}/file",
                            params={"path": path},
                            timeout=30,
                        )
                        source = api.json().get("source") if api.status_code == 200 else None
                        shown[path] = (api.status_code, source, page.text)
                    serving = process_cost(served.pid)
                    evil_page = httpx.get(  # the alias bomb's head
                        f"{served.url}/{ATTACKER}/commit/{'1' * 40}", timeout=30
                    ).text
                    page_cpu_s = process_cost(served.pid).cpu_s - serving.cpu_s
                with engine.connect() as conn:
                    fetched = conn.execute(
                        sa.select(sa.func.length(Repository.fetched_codecov_yaml)).where(
                            Repository.name == ATTACKER
                        )
                    ).scalar()
                    prepares = conn.execute(
                        sa.select(PullDelivery.state, PullDelivery.error)
                        .join(Commit)
                        .where(PullDelivery.target == "prepare", Commit.sha.in_(list(HEADS)))
                    ).all()
            finally:
                engine.dispose()
            client = redis.Redis.from_url(redis_test_url())
            try:
                cached = {
                    bytes(key): client.strlen(key)
                    for key in client.scan_iter(f"{namespace}:prfeedback:yaml:*")
                }
            finally:
                client.close()
        worker_log = log.read_text(errors="replace")

    assert gh.violations() == []
    # 1: the climbing path stays in the attacker's repository, and no call leaves it
    for _, source, page in shown.values():
        assert "API_KEY" not in page and "API_KEY" not in str(source)
    assert fake.calls(contains="/repos/victim/") == []
    assert not [c for c in fake.calls(contains="/contents/") if ".." in c.path]
    assert shown[CLEANED][0] == 200 and shown[CLEANED][1] is None  # stored inside, no source
    # 2, 9, 12: every pull request got one comment on the first prepare, the
    # problem named in one short line
    for number, (_, problem) in enumerate(HEADS.values(), start=1):
        (body,) = fake.comments_on(ATTACKER, number).values()
        assert f"\\(file\\): {problem}" in body, body  # Markdown-escaped
        assert len(body.encode()) < 8 * 1024
        # 15: the path's controls are escapes in the comment
        assert "\u202e" not in body and "\x1b" not in body and "evil" in body
    assert "Retrying" not in worker_log and "RecursionError" not in worker_log
    # 9: the 2 MiB file was read no further than its bound and kept nowhere
    oversized = next(k for k in cached if k.endswith(b"3" * 40))
    assert cached[oversized] < 100, cached
    # the file kept for the pages is the last head's read (or none): never the 2 MiB one
    assert (fetched or 0) < 64 * 1024
    # 2, 9, 12: what the three heads cost the worker, and the bomb's commit page
    assert worker.cpu_s - before.cpu_s < 15, (worker, before)
    assert worker.peak_rss - before.peak_rss < 100 * MIB, (worker, before)
    assert len(evil_page.encode()) < 200_000 and page_cpu_s < 2.0, page_cpu_s
    # 15: and on the commit page
    assert "\u202e" not in evil_page and "\x1b" not in evil_page
    # 12: each head's prepare was done, and none failed over its codecov.yml
    # (a provider timeout on a loaded machine may make it try twice)
    assert [state for state, _ in prepares] == ["sent"] * len(HEADS), prepares
    assert not [e for _, e in prepares if e and ("Recursion" in e or "YAML" in e)], prepares


CATASTROPHIC = "^(a+)+$"
#: Paths a backtracking engine takes 2**L steps to refuse against it.
LONG_AS = ("a" * 32 + "b", "a" * 200 + "b")
PATTERN_YML = f"""\
ignore: ['{CATASTROPHIC}']
flags:
  unit:
    paths: ['{CATASTROPHIC}']
coverage:
  status:
    patch:
      default:
        paths: ['{CATASTROPHIC}']
""".encode()
QUIET = "acme/quiet"


#: 1 MiB of newlines but the last line: the file page's source (bound: 1 MiB).
NEWLINES = b"\n" * (MIB - 6) + b"x = 1"
BIG_LCOV = b"# path=coverage.info\nSF:src/big.py\nDA:1048000,1\nend_of_record\n<<<<<< EOF\n"


def test_a_catastrophic_pattern_and_a_megabyte_of_newlines_cost_what_their_size_does(
    tmp_path: Path, namespace: str
) -> None:
    require_redis()
    head = "4" * 40
    with FakeGitHub() as fake, prism_proxy(GITHUB_SPEC, fake.url, tmp_path / "prism.log") as gh:
        fake.add_file(ATTACKER, "a" * 40, "src/big.py", NEWLINES)
        fake.add_file(ATTACKER, head, "codecov.yml", PATTERN_YML)
        fake.add_pull(ATTACKER, FakePull(1, BASE, "main", head, "f1"))
        patch = "@@ -0,0 +1,2 @@\n+a\n+b\n"
        fake.add_diff(ATTACKER, BASE, head, [(path, "added", patch) for path in LONG_AS])
        with migrated_database(
            namespace,
            COVWORKER_GITHUB_TOKEN="ghp_e2e",
            COVWORKER_GITHUB_API_URL=gh.url,
            COVWORKER_PR_DELIVERY_MIN_BACKOFF_S="0.5",
            COVWORKER_PROVIDER_TIMEOUT_S="60",
        ) as (db_url, env):
            tokens = {slug: add_repo(env, slug) for slug in (ATTACKER, QUIET)}
            engine = sa.create_engine(db_url)
            try:
                with (
                    dramatiq_workers(
                        env, tmp_path / "worker.log", processes=1, threads=4
                    ) as workers,
                    covworker_serve(env, tmp_path / "serve.log") as served,
                ):

                    def upload(slug: str, sha: str, body: bytes, **params: str) -> None:
                        answer = httpx.post(
                            f"{served.url}/upload/v2",
                            params={"commit": sha, "token": tokens[slug], "slug": slug, **params},
                            content=body,
                            timeout=60,
                        )
                        assert answer.status_code == 200, answer.text

                    upload(ATTACKER, "a" * 40, BIG_LCOV)
                    wait_for("the first upload merged", lambda: merged(engine, 1))
                    reset_peak_rss(workers.pid)
                    before = process_cost(workers.pid)
                    started = time.monotonic()
                    upload(ATTACKER, head, lcov(*LONG_AS), pr="1", branch="f1", flags="unit")
                    upload(QUIET, "9" * 40, lcov("src/quiet.py"))
                    wait_for("both uploads merged", lambda: merged(engine, 3))
                    both_merged_s = time.monotonic() - started

                    def commented() -> bool:
                        with engine.connect() as conn:
                            states = conn.execute(
                                sa.select(PullDelivery.state).where(
                                    PullDelivery.target == "comment"
                                )
                            ).scalars()
                            return any(s != "pending" for s in states)

                    wait_for("the pull request's comment", commented)
                    worker = process_cost(workers.pid)

                    page = f"{served.url}/{ATTACKER}/commit/{'a' * 40}/file/src/big.py"
                    pages = []  # (answer, serve's cost of it)
                    for url in (page, f"{page}?from=1047001"):
                        reset_peak_rss(served.pid)
                        idle = process_cost(served.pid)
                        answer = httpx.get(url, timeout=60)
                        pages.append((answer, process_cost(served.pid), idle))
            finally:
                engine.dispose()

    assert gh.violations() == []
    (body,) = fake.comments_on(ATTACKER, 1).values()
    assert "ConfigError" not in body and "(file)" not in body, body  # RE2 takes the pattern
    assert worker.cpu_s - before.cpu_s < 5, (worker, before)
    assert worker.peak_rss - before.peak_rss < 64 * MIB, (worker, before)
    assert both_merged_s < 60, both_merged_s
    # 5: a thousand source rows a GET, the first GET reading the source from GitHub
    for answer, cost, idle in pages:
        assert answer.status_code == 200
        assert answer.text.count("<tr class") == 1000
        assert len(answer.content) < 200_000
        assert cost.cpu_s - idle.cpu_s < 1.0, (cost, idle)
        assert cost.peak_rss - idle.peak_rss < 32 * MIB, (cost, idle)
    assert '<tr class="hit" id="L1048000">' in pages[1][0].text
