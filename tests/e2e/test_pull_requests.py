"""A pull request end to end: real git, coverage.py, codecovcli, covworker serve,
real workers, and a fake GitHub behind Prism (GitHub's OpenAPI description).

A small real project gets a base commit on ``main`` and a pull-request commit
on ``feature``; coverage.py runs its tests at each; the real ``codecovcli
upload-process`` uploads them (the pull request with ``-B feature -P 7`` and
no ``--parent-sha``, as the Codecov GitHub Action does). covworker must then
set ``codecov/project`` and ``codecov/patch`` with the numbers coverage.py
and ``git diff`` give, comment once, and edit that comment for the next
report version, through a provider that answers 502 once.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import ROUND_FLOOR, Decimal
from pathlib import Path

import pytest
import sqlalchemy as sa

from app.db.models import Commit, PullDelivery
from tests.support.brokers import settle
from tests.support.fake_github import (
    GITHUB_SPEC,
    PRISM,
    FakeGitHub,
    FakePull,
    free_port,
    prism_proxy,
)
from tests.support.processes import (
    add_repo,
    covworker_serve,
    dramatiq_workers,
    migrated_database,
)
from tests.support.services import require_redis
from tests.support.uploaders import codecovcli, uploader_env

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.integration,
    pytest.mark.timeout(600),
    pytest.mark.skipif(not PRISM.exists(), reason="Prism not installed (.ci/run)"),
]

REPO = "acme/calc"
OPS_BASE = """\
def add(a, b):
    return a + b


def sub(a, b):
    return a - b


def sign(x):
    if x < 0:
        return -1
    return 1
"""
OPS_PR = (
    OPS_BASE
    + """

def mul(a, b):
    return a * b


def div(a, b):
    if b == 0:
        raise ZeroDivisionError("b is zero")
    return a / b
"""
)
TESTS_BASE = """\
import unittest

from calc import ops


class OpsTest(unittest.TestCase):
    def test_add(self):
        self.assertEqual(ops.add(2, 3), 5)

    def test_sign(self):
        self.assertEqual(ops.sign(4), 1)
"""
TESTS_PR = (
    TESTS_BASE
    + """
    def test_mul(self):
        self.assertEqual(ops.mul(2, 3), 6)

    def test_div(self):
        self.assertEqual(ops.div(4, 2), 2)
"""
)
#: A second CI job of the pull request: tests of the same code, more of it.
TESTS_MORE = """\
import unittest

from calc import ops


class MoreTest(unittest.TestCase):
    def test_sub(self):
        self.assertEqual(ops.sub(2, 3), -1)

    def test_div_by_zero(self):
        with self.assertRaises(ZeroDivisionError):
            ops.div(1, 0)
"""


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.email=ci@example.com", "-c", "user.name=ci", *args],
        cwd=repo, check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip


def commit_files(repo: Path, files: dict[str, str], message: str) -> str:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "add", *files)
    git(repo, "commit", "-qm", message)
    return git(repo, "rev-parse", "HEAD")


def project_on_main(tmp_path: Path, files: dict[str, str]) -> tuple[Path, str]:
    """A new git repository whose first commit, on ``main``, holds ``files``: its
    folder and that commit's SHA."""
    repo = tmp_path / "calc"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    return repo, commit_files(repo, files, "calc")


#: The base commit's project on ``main``.
BASE_FILES = {"calc/__init__.py": "", "calc/ops.py": OPS_BASE, "tests/test_ops.py": TESTS_BASE}


def push_mul_and_div(repo: Path) -> str:
    """The pull request's commit on ``feature``: mul and div, a test file more."""
    git(repo, "checkout", "-qb", "feature")
    return commit_files(
        repo,
        {"calc/ops.py": OPS_PR, "tests/test_ops.py": TESTS_PR, "tests/test_more.py": TESTS_MORE},
        "mul and div",
    )


@contextmanager
def covworker_on_github(
    namespace: str, github_url: str, public_url: str, **extra: str
) -> Iterator[tuple[str, dict[str, str], str]]:
    """A fresh, migrated database and covworker's environment on it, talking to the
    GitHub API at ``github_url``, with ``REPO`` added: (database URL, environment,
    the repository's upload token)."""
    with migrated_database(
        namespace,
        COVWORKER_UPLOAD_URL_SECRET="e2e-secret",
        COVWORKER_GITHUB_TOKEN="ghp_e2e",
        COVWORKER_GITHUB_API_URL=github_url,
        COVWORKER_PUBLIC_URL=public_url,
        **extra,
    ) as (db_url, env):
        yield db_url, env, add_repo(env, REPO)


def run_coverage(repo: Path, tests: str, out: str) -> dict:
    """coverage.py with branches over ``tests``: Cobertura XML to upload, JSON to check."""
    env = {"PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"}
    data = f".coverage.{out}"
    run = [sys.executable, "-m", "coverage"]
    subprocess.run(
        [*run, "run", "--branch", f"--data-file={data}", "--source=calc",
         "-m", "unittest", "-q", tests],
        cwd=repo, check=True, env=env, capture_output=True,
    )  # fmt: skip
    subprocess.run([*run, "xml", f"--data-file={data}", "-o", f"{out}.xml"], cwd=repo, check=True)
    subprocess.run([*run, "json", f"--data-file={data}", "-o", f"{out}.json"], cwd=repo, check=True)
    return json.loads((repo / f"{out}.json").read_text())


def line_states(reports: list[dict]) -> dict[str, dict[int, str]]:
    """Codecov's line states from coverage.py's JSON, merged over jobs as Codecov merges:
    a line is hit if any job ran it and every branch from it ran in some job,
    partial if it ran with some branch never taken, miss if no job ran it."""
    ran: dict[str, set[int]] = {}
    coverable: dict[str, set[int]] = {}
    taken: dict[str, set[tuple[int, int]]] = {}
    arcs: dict[str, set[tuple[int, int]]] = {}
    for report in reports:
        for path, f in report["files"].items():
            ran.setdefault(path, set()).update(f["executed_lines"])
            coverable.setdefault(path, set()).update(f["executed_lines"], f["missing_lines"])
            done = {tuple(a) for a in f.get("executed_branches", [])}
            taken.setdefault(path, set()).update(done)
            arcs.setdefault(path, set()).update(done, (tuple(a) for a in f["missing_branches"]))
    states: dict[str, dict[int, str]] = {}
    for path, lines in coverable.items():
        states[path] = {}
        for n in lines:
            if n not in ran[path]:
                states[path][n] = "miss"
                continue
            mine = {a for a in arcs[path] if a[0] == n}
            states[path][n] = "partial" if mine - taken[path] else "hit"
    return states


def percent(hits: int, lines: int) -> Decimal:
    """Codecov's default: two places, rounded down."""
    return Decimal(f"{100.0 * hits / lines:.5f}").quantize(Decimal("0.01"), rounding=ROUND_FLOOR)


def totals(states: dict[str, dict[int, str]]) -> tuple[int, int]:
    all_states = [s for f in states.values() for s in f.values()]
    return sum(s == "hit" for s in all_states), len(all_states)


def git_diff_files(repo: Path, base: str, head: str) -> list[tuple[str, str, str | None]]:
    """``git diff base...head`` as GitHub's compare lists it: (filename, status, patch)."""
    text = git(repo, "diff", f"{base}...{head}")
    files = []
    for chunk in re.split(r"^diff --git ", text, flags=re.M)[1:]:
        path = chunk.split("\n", 1)[0].split(" b/", 1)[1]
        status = "added" if "\nnew file mode" in chunk else "modified"
        patch = chunk[chunk.index("\n@@") + 1 :]
        files.append((path, status, patch))
    return files


def added_lines(patch: str) -> list[int]:
    added, line = [], 0
    for row in patch.splitlines():
        if m := re.match(r"@@ -\d+(?:,\d+)? \+(\d+)", row):
            line = int(m[1])
        elif row.startswith("+"):
            added.append(line)
            line += 1
        elif not row.startswith("-"):
            line += 1
    return added


def wait_for(condition, timeout_s: float = 30.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting for a condition"
        time.sleep(0.1)


def test_a_pull_request_gets_codecovs_statuses_and_one_comment_edited_in_place(
    tmp_path: Path, namespace: str
) -> None:
    require_redis()
    repo, base_sha = project_on_main(tmp_path, BASE_FILES)
    base_cov = run_coverage(repo, "tests/test_ops.py", "base")
    head_sha = push_mul_and_div(repo)
    unit_cov = run_coverage(repo, "tests/test_ops.py", "unit")
    more_cov = run_coverage(repo, "tests/test_more.py", "more")
    diff = git_diff_files(repo, base_sha, head_sha)

    with FakeGitHub() as fake, prism_proxy(GITHUB_SPEC, fake.url, tmp_path / "prism.log") as gh:
        fake.add_pull(REPO, FakePull(7, base_sha, "main", head_sha, "feature"))
        fake.add_diff(REPO, base_sha, head_sha, diff)
        port = free_port()  # the public URL (PUT URLs, status links) is known up front
        public_url = f"http://127.0.0.1:{port}"
        with covworker_on_github(
            namespace, gh.url, public_url, COVWORKER_PR_DELIVERY_MIN_BACKOFF_S="0.5"
        ) as (db_url, env, token):
            clients = uploader_env(env)
            engine = sa.create_engine(db_url)

            def upload(sha: str, report: str, name: str, *extra: str) -> None:
                done = codecovcli(
                    clients, repo, served.url, "upload-process",
                    "-r", REPO, "-C", sha, "-t", token, "-n", name, "-F", name, "-f", report,
                    *extra,
                )  # fmt: skip
                assert done.returncode == 0, done.stdout + done.stderr

            def deliveries(sha: str) -> list[tuple[int, str, str]]:
                with engine.connect() as conn:
                    return [
                        tuple(r)
                        for r in conn.execute(
                            sa.select(
                                PullDelivery.report_version, PullDelivery.target, PullDelivery.state
                            )
                            .join(Commit)
                            .where(Commit.sha == sha)
                            .order_by(PullDelivery.id)
                        )
                    ]

            def delivered(sha: str, version: int) -> bool:
                rows = [r for r in deliveries(sha) if r[0] == version]
                return len(rows) > 1 and all(r[2] != "pending" for r in rows)

            log = tmp_path / "worker.log"
            with (
                dramatiq_workers(env, log, processes=1, threads=4),
                covworker_serve(env, tmp_path / "api.log", extra=("--port", str(port))) as served,
            ):
                upload(base_sha, "base.xml", "base", "-B", "main")
                settle(env, timeout_s=120)
                upload(head_sha, "unit.xml", "unit", "-B", "feature", "-P", "7")
                settle(env, timeout_s=120)
                wait_for(lambda: delivered(head_sha, 1))
                first_comments = fake.comments_on(REPO, 7)

                fake.fail("POST", r"/statuses/", 502)  # the provider hiccups once
                upload(head_sha, "more.xml", "more", "-B", "feature", "-P", "7")
                settle(env, timeout_s=120)
                wait_for(lambda: delivered(head_sha, 2))
            engine.dispose()

    assert gh.violations() == []
    # The base commit (no pull request) got its statuses too; look at the head's.
    statuses = {}
    for s in fake.state.statuses[(REPO, head_sha)]:
        if s["state"] != "pending":  # sent while an upload was in flight, if one was
            statuses.setdefault(s["context"], []).append(s["description"])

    base_hits, base_lines = totals(line_states([base_cov]))
    added = {path: added_lines(patch) for path, _, patch in diff if patch}

    def expected(reports: list[dict]) -> tuple[str, str]:
        states = line_states(reports)
        hits, lines = totals(states)
        head, base = percent(hits, lines), Decimal(f"{100.0 * base_hits / base_lines:.5f}")
        change = (Decimal(f"{100.0 * hits / lines:.5f}") - base).quantize(
            Decimal("0.01"), rounding=ROUND_FLOOR
        )
        patch = [
            states[path][n] for path, ns in added.items() for n in ns if n in states.get(path, {})
        ]
        patch_pct = percent(sum(s == "hit" for s in patch), len(patch))
        return (
            f"{head}% ({change:+}%) compared to {base_sha[:7]}",
            f"{patch_pct}% of diff hit (target {percent(base_hits, base_lines)}%)",
        )

    last = {}
    for s in fake.state.statuses[(REPO, head_sha)]:
        last[s["context"]] = s["state"]
    assert "pending" not in last.values()  # a pending status never outlives the final one
    v1, v2 = expected([unit_cov]), expected([unit_cov, more_cov])
    assert statuses["codecov/project"] == [v1[0], v2[0]]
    assert statuses["codecov/patch"] == [v1[1], v2[1]]
    # One comment, created for version 1 and edited for version 2.
    assert len(first_comments) == 1
    comments = fake.comments_on(REPO, 7)
    assert list(comments) == list(first_comments)
    assert len(fake.calls("POST", "/issues/7/comments")) == 1
    assert len(fake.calls("PATCH", "/issues/comments/")) == 1
    body = next(iter(comments.values()))
    # For docs/screenshots/render_comment.py: the comment of each version.
    (tmp_path / "comment-v1.md").write_text(next(iter(first_comments.values())))
    (tmp_path / "comment.md").write_text(body)
    assert v2[0].split("%")[0] in body
    # The 502 was retried: the version's status went out once more, not twice.
    pending = sum(s["state"] == "pending" for s in fake.state.statuses[(REPO, head_sha)])
    assert len(fake.calls("POST", f"/statuses/{head_sha}")) == 4 + pending + 1


#: A second job of the base commit's matrix, skipped on the pull request.
TESTS_SIDE = """\
import unittest

from calc import ops


class SideTest(unittest.TestCase):
    def test_sub(self):
        self.assertEqual(ops.sub(2, 3), -1)

    def test_negative_sign(self):
        self.assertEqual(ops.sign(-4), -1)
"""
CARRYFORWARD_YAML = """\
flag_management:
  default_rules:
    carryforward: true
comment:
  show_carryforward_flags: true
"""


def test_a_flag_whose_job_was_skipped_is_carried_forward_into_the_statuses_and_comment(
    tmp_path: Path, namespace: str
) -> None:
    require_redis()
    repo, base_sha = project_on_main(
        tmp_path,
        {
            "calc/__init__.py": "",
            "calc/ops.py": OPS_BASE,
            "tests/test_ops.py": TESTS_BASE,
            "tests/test_side.py": TESTS_SIDE,
        },
    )
    unit_base = run_coverage(repo, "tests/test_ops.py", "unit-base")
    side_base = run_coverage(repo, "tests/test_side.py", "side-base")
    git(repo, "checkout", "-qb", "feature")
    head_sha = commit_files(repo, {"calc/ops.py": OPS_PR, "tests/test_ops.py": TESTS_PR}, "mul")
    unit_head = run_coverage(repo, "tests/test_ops.py", "unit-head")
    diff = git_diff_files(repo, base_sha, head_sha)
    with FakeGitHub() as fake, prism_proxy(GITHUB_SPEC, fake.url, tmp_path / "prism.log") as gh:
        fake.add_pull(REPO, FakePull(7, base_sha, "main", head_sha, "feature"))
        fake.add_diff(REPO, base_sha, head_sha, diff)
        fake.add_file(REPO, head_sha, "codecov.yml", CARRYFORWARD_YAML.encode())
        port = free_port()
        public_url = f"http://127.0.0.1:{port}"
        with covworker_on_github(namespace, gh.url, public_url) as (db_url, env, token):
            # No file stored with `repo set --yaml`: carryforward follows the
            # head's own codecov.yml, read from GitHub before its first merge.
            engine = sa.create_engine(db_url)

            def delivered(sha: str) -> bool:
                with engine.connect() as conn:
                    states = conn.scalars(
                        sa.select(PullDelivery.state).join(Commit).where(Commit.sha == sha)
                    ).all()
                return len(states) > 1 and "pending" not in states

            with (
                dramatiq_workers(env, tmp_path / "worker.log", processes=1, threads=4),
                covworker_serve(env, tmp_path / "api.log", extra=("--port", str(port))) as served,
            ):
                for sha, report, flag, extra in (
                    (base_sha, "unit-base.xml", "unit", ("-B", "main")),
                    (base_sha, "side-base.xml", "side", ("-B", "main")),
                    # The pull request's matrix skips the side job; uploaded as the
                    # Codecov GitHub Action does: no --parent-sha, so the flag is
                    # carried from main's newest settled commit.
                    (head_sha, "unit-head.xml", "unit", ("-B", "feature", "-P", "7")),
                ):  # fmt: skip
                    done = codecovcli(
                        uploader_env(env), repo, served.url, "upload-process",
                        "-r", REPO, "-C", sha, "-t", token, "-n", flag, "-F", flag,
                        "-f", report, *extra,
                    )  # fmt: skip
                    assert done.returncode == 0, done.stdout + done.stderr
                    settle(env, timeout_s=120)
                wait_for(lambda: delivered(head_sha))
            engine.dispose()
    assert gh.violations() == []

    states = line_states([unit_head, side_base])  # the side job's lines, carried
    hits, lines = totals(states)
    base_hits, base_lines = totals(line_states([unit_base, side_base]))
    head_pct = Decimal(f"{100.0 * hits / lines:.5f}")
    change = (head_pct - Decimal(f"{100.0 * base_hits / base_lines:.5f}")).quantize(
        Decimal("0.01"), rounding=ROUND_FLOOR
    )
    project = [
        s["description"]
        for s in fake.state.statuses[(REPO, head_sha)]
        if s["context"] == "codecov/project" and s["state"] != "pending"
    ]
    assert project == [f"{percent(hits, lines)}% ({change:+}%) compared to {base_sha[:7]}"]
    (body,) = fake.comments_on(REPO, 7).values()
    side_row = next(line for line in body.splitlines() if line.startswith("| [side]"))
    assert f"Carriedforward from [{base_sha[:7]}]" in side_row


#: Spacing of a commit's feedback in the trickle test (s): longer than two
#: uploads with codecovcli take, so the jobs after the first end within it.
TRICKLE_SPACING_S = 20.0


def test_a_matrix_trickling_in_gets_its_feedback_once_at_first_and_once_after_it_stops(
    tmp_path: Path, namespace: str
) -> None:
    require_redis()
    repo, base_sha = project_on_main(tmp_path, BASE_FILES)
    head_sha = push_mul_and_div(repo)
    unit_cov = run_coverage(repo, "tests/test_ops.py", "unit")
    more_cov = run_coverage(repo, "tests/test_more.py", "more")
    diff = git_diff_files(repo, base_sha, head_sha)
    jobs = ["unit", "more", "unit"]  # three jobs, each settling the commit again

    with FakeGitHub() as fake, prism_proxy(GITHUB_SPEC, fake.url, tmp_path / "prism.log") as gh:
        fake.add_pull(REPO, FakePull(7, base_sha, "main", head_sha, "feature"))
        fake.add_diff(REPO, base_sha, head_sha, diff)
        port = free_port()
        public_url = f"http://127.0.0.1:{port}"
        with covworker_on_github(
            namespace,
            gh.url,
            public_url,
            COVWORKER_PR_FEEDBACK_SPACING_S=str(TRICKLE_SPACING_S),
        ) as (db_url, env, token):
            engine = sa.create_engine(db_url)

            def prepares() -> list[tuple[int, str]]:
                return [(version, state) for version, state, _ in prepare_rows()]

            def prepare_rows() -> list[tuple[int, str, float]]:
                with engine.connect() as conn:
                    return [
                        (int(version), str(state), created.timestamp())
                        for version, state, created in conn.execute(
                            sa.select(
                                PullDelivery.report_version,
                                PullDelivery.state,
                                PullDelivery.created_at,
                            )
                            .join(Commit)
                            .where(Commit.sha == head_sha, PullDelivery.target == "prepare")
                            .order_by(PullDelivery.report_version)
                        )
                    ]

            with (
                dramatiq_workers(env, tmp_path / "worker.log", processes=1, threads=4),
                covworker_serve(env, tmp_path / "api.log", extra=("--port", str(port))) as served,
            ):
                for n, flag in enumerate(jobs, start=1):
                    done = codecovcli(
                        uploader_env(env), repo, served.url, "upload-process",
                        "-r", REPO, "-C", head_sha, "-t", token, "-n", f"{flag}-{n}",
                        "-F", flag, "-f", f"{flag}.xml", "-B", "feature", "-P", "7",
                    )  # fmt: skip
                    assert done.returncode == 0, done.stdout + done.stderr
                    wait_for(lambda n=n: len(prepares()) >= n)  # version n settled
                last = len(jobs)
                wait_for(lambda: (last, "sent") in prepares(), TRICKLE_SPACING_S * 4)
                settle(env, timeout_s=60)
                rows = prepare_rows()
            engine.dispose()
    assert gh.violations() == []

    # Version 1 at once; 2 replaced by 3 within the spacing; 3 once the
    # spacing after 2 had passed, not before.
    assert [row[:2] for row in rows] == [(1, "sent"), (2, "superseded"), (3, "sent")]
    assert len(fake.calls("POST", "/issues/7/comments")) == 1
    [edit] = fake.calls("PATCH", "/issues/comments/")  # once, not once per upload
    assert edit.at >= rows[1][2] + TRICKLE_SPACING_S - 0.5  # clocks: the same machine
    [body] = fake.comments_on(REPO, 7).values()
    hits, lines = totals(line_states([unit_cov, more_cov]))  # the last version's
    assert f"{percent(hits, lines)}%" in body
