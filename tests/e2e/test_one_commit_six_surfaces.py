"""One commit, six surfaces: the commit page, the commits list, the JSON API, the
badge, the CLI, and the pull request's comment and statuses show the same base
and the same figure.

Real git, the real ``codecovcli`` uploading as the Codecov GitHub Action does
(``-B feature -P 7``, no ``--parent-sha``), ``covworker serve``, real workers on
Redis and PostgreSQL, and the fake GitHub behind Prism. The pull request's
commit has 9 partial lines in 2,183: 99.58772 %, which Codecov's default
(two places, rounded down) shows as 99.58 and two decimals to nearest as 99.59.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import httpx
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
    covworker,
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

REPO = "acme/six"
BASE_LINES, HEAD_LINES, PARTIALS = 100, 2183, 9
#: What every surface must show: the head's coverage, the change against main.
SHOWN, CHANGE = "99.58", "+49.58"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.email=ci@example.com", "-c", "user.name=ci", *args],
        cwd=repo, check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip


def source(lines: int) -> str:
    return "".join(f"x{n} = {n}\n" for n in range(1, lines + 1))


def lcov(lines: int, hit: int, partial: int) -> str:
    """``lines`` lines of calc/big.py, the first ``hit`` run, the first ``partial``
    of those with one of two branches taken."""
    brda = "".join(f"BRDA:{n},0,0,1\nBRDA:{n},0,1,0\n" for n in range(1, partial + 1))
    da = "".join(f"DA:{n},{int(n <= hit)}\n" for n in range(1, lines + 1))
    return f"SF:calc/big.py\n{brda}{da}end_of_record\n"


def wait_for(condition, timeout_s: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting for a condition"
        time.sleep(0.1)


def test_one_commit_shows_one_base_and_one_figure_on_every_surface(
    tmp_path: Path, namespace: str
) -> None:
    require_redis()
    repo = tmp_path / "six"
    (repo / "calc").mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    (repo / "calc" / "big.py").write_text(source(BASE_LINES))
    git(repo, "add", "calc")
    git(repo, "commit", "-qm", "base")
    base_sha = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-qb", "feature")
    (repo / "calc" / "big.py").write_text(source(HEAD_LINES))
    git(repo, "commit", "-qam", "more")
    head_sha = git(repo, "rev-parse", "HEAD")
    diff = git(repo, "diff", base_sha, head_sha, "--", "calc/big.py")
    patch = diff[diff.index("\n@@") + 1 :]
    (repo / "base.info").write_text(lcov(BASE_LINES, BASE_LINES // 2, 0))
    (repo / "head.info").write_text(lcov(HEAD_LINES, HEAD_LINES, PARTIALS))

    with FakeGitHub() as fake, prism_proxy(GITHUB_SPEC, fake.url, tmp_path / "prism.log") as gh:
        fake.add_pull(REPO, FakePull(7, base_sha, "main", head_sha, "feature"))
        fake.add_diff(REPO, base_sha, head_sha, [("calc/big.py", "modified", patch)])
        port = free_port()
        public_url = f"http://127.0.0.1:{port}"
        with migrated_database(
            namespace,
            COVWORKER_UPLOAD_URL_SECRET="e2e-secret",
            COVWORKER_GITHUB_TOKEN="ghp_e2e",
            COVWORKER_GITHUB_API_URL=gh.url,
            COVWORKER_PUBLIC_URL=public_url,
        ) as (db_url, env):
            token = add_repo(env, REPO)
            engine = sa.create_engine(db_url)

            def delivered() -> bool:
                with engine.connect() as conn:
                    states = conn.scalars(
                        sa.select(PullDelivery.state).join(Commit).where(Commit.sha == head_sha)
                    ).all()
                return len(states) > 1 and "pending" not in states

            with (
                dramatiq_workers(env, tmp_path / "worker.log", processes=1, threads=4),
                covworker_serve(env, tmp_path / "api.log", extra=("--port", str(port))) as served,
            ):
                for sha, report, extra in (
                    (base_sha, "base.info", ("-B", "main")),
                    (head_sha, "head.info", ("-B", "feature", "-P", "7")),  # the Action's way
                ):
                    done = codecovcli(
                        uploader_env(env), repo, served.url, "upload-process",
                        "-r", REPO, "-C", sha, "-t", token, "-n", "unit", "-f", report, *extra,
                    )  # fmt: skip
                    assert done.returncode == 0, done.stdout + done.stderr
                    settle(env, timeout_s=120)
                wait_for(delivered)

                with httpx.Client(base_url=served.url, timeout=30) as web:
                    page = web.get(f"/{REPO}/commit/{head_sha}").text
                    listing_html = web.get(f"/{REPO}").text
                    listing = web.get(f"/api/v1/repos/{REPO}/commits").json()
                    data = web.get(f"/api/v1/repos/{REPO}/commits/{head_sha}").json()
                    badge = web.get(f"/{REPO}/badge.svg", params={"branch": "feature"}).text
            engine.dispose()
            wide = {**env, "COLUMNS": "200"}  # rich's tables unwrapped
            report = covworker(wide, "report", "--repo", REPO, "--commit", head_sha)
            status = covworker(wide, "status", "--repo", REPO, "--commit", head_sha, "--json")
            commits = covworker(wide, "commits", REPO)
    assert gh.violations() == []

    # 1. the commit page
    assert f'data-total="coverage">{SHOWN}%<' in page
    assert base_sha[:8] in page and "No base" not in page
    assert re.search(r'id="base-change">\+49\.58%<', page)
    # 2. the commits list (page and JSON)
    (row,) = [c for c in listing["commits"] if c["commit"] == head_sha]
    assert (row["base_commit"], row["coverage_display"], row["change_display"]) == (
        base_sha,
        SHOWN,
        CHANGE,
    )
    assert f">{SHOWN}%<" in listing_html and "+49.58%" in listing_html
    # 3. the JSON API: the displayed figure beside the unrounded one
    assert data["base"]["commit"] == base_sha
    assert data["totals"]["coverage"] == 99.58772
    assert data["totals"]["coverage_display"] == SHOWN
    assert data["base"]["change_display"] == CHANGE
    # 4. the badge of the pull request's branch
    assert f">{SHOWN}%<" in badge
    # 5. the CLI
    assert report.returncode == 0, report.stderr
    assert SHOWN in report.stdout and f"base {base_sha[:12]}, change {CHANGE}%" in report.stdout
    shown_status = json.loads(status.stdout)
    assert (shown_status["base_commit"], shown_status["coverage_display"]) == (base_sha, SHOWN)
    assert shown_status["change_display"] == CHANGE
    head_row = next(line for line in commits.stdout.splitlines() if head_sha[:12] in line)
    assert SHOWN in head_row and CHANGE in head_row
    # 6. the statuses and the comment
    project = [
        s["description"]
        for s in fake.state.statuses[(REPO, head_sha)]
        if s["context"] == "codecov/project" and s["state"] != "pending"
    ]
    assert project == [f"{SHOWN}% ({CHANGE}%) compared to {base_sha[:7]}"]
    (body,) = fake.comments_on(REPO, 7).values()
    assert f"{SHOWN}%" in body and "99.59" not in body and base_sha[:7] in body
