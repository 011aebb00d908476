"""A pull-request comment longer than GitHub allows is cut to fit, not lost.

Real ``covworker serve`` and ``dramatiq`` workers on Redis and PostgreSQL,
codecov-cli uploading coverage.py's Cobertura and pytest's JUnit XML, and
the fake GitHub behind Prism refusing a body over 65,536 characters with
GitHub's 422. 45 failing tests with 1.5 kB messages make a 72 kB comment:
without the cut, the delivery failed and the pull request got no comment,
its coverage included.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa

from tests.e2e.test_pull_requests import (
    OPS_BASE,
    OPS_PR,
    REPO,
    TESTS_BASE,
    TESTS_PR,
    commit_files,
    covworker_on_github,
    git,
    git_diff_files,
    project_on_main,
    run_coverage,
    wait_for,
)
from tests.support.brokers import settle
from tests.support.fake_github import (
    GITHUB_SPEC,
    MAX_COMMENT_CHARS,
    PRISM,
    FakeGitHub,
    FakePull,
    free_port,
    prism_proxy,
)
from tests.support.processes import covworker_serve, dramatiq_workers
from tests.support.services import require_redis
from tests.support.uploaders import codecovcli, uploader_env

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.integration,
    pytest.mark.timeout(600),
    pytest.mark.skipif(not PRISM.exists(), reason="Prism not installed (.ci/run)"),
]

#: 45 tests failing with a 1,500-character message each.
FAILING = """\
import pytest


@pytest.mark.parametrize("n", range(45))
def test_long_failure(n):
    raise AssertionError(f"case {n}: " + "x" * 1500)
"""


def junit_of_failing_tests(repo: Path) -> None:
    (repo / "failing_test.py").write_text(FAILING)
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "failing_test.py",
         "--junitxml=junit.xml", "-o", "junit_family=xunit1"],
        cwd=repo, env={"PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True,
    )  # fmt: skip
    assert (repo / "junit.xml").read_bytes().count(b"<failure") == 45


def test_a_comment_over_githubs_65536_characters_is_cut_with_a_note_and_keeps_its_coverage(
    tmp_path: Path, namespace: str
) -> None:
    require_redis()
    repo, base_sha = project_on_main(
        tmp_path, {"calc/__init__.py": "", "calc/ops.py": OPS_BASE, "tests/test_ops.py": TESTS_BASE}
    )
    run_coverage(repo, "tests/test_ops.py", "base")
    git(repo, "checkout", "-qb", "feature")
    head_sha = commit_files(repo, {"calc/ops.py": OPS_PR, "tests/test_ops.py": TESTS_PR}, "mul")
    run_coverage(repo, "tests/test_ops.py", "head")
    junit_of_failing_tests(repo)
    diff = git_diff_files(repo, base_sha, head_sha)
    with FakeGitHub() as fake, prism_proxy(GITHUB_SPEC, fake.url, tmp_path / "prism.log") as gh:
        fake.add_pull(REPO, FakePull(7, base_sha, "main", head_sha, "feature"))
        fake.add_diff(REPO, base_sha, head_sha, diff)
        port = free_port()
        public_url = f"http://127.0.0.1:{port}"
        with covworker_on_github(namespace, gh.url, public_url) as (db_url, env, token):
            engine = sa.create_engine(db_url)

            def delivered() -> bool:
                with engine.connect() as conn:
                    states = conn.execute(
                        sa.text(
                            "SELECT d.target, d.state FROM pull_deliveries d JOIN commits c "
                            "ON c.id = d.commit_id WHERE c.sha = :sha"
                        ),
                        {"sha": head_sha},
                    ).all()
                return any(t == "comment" and s != "pending" for t, s in states)

            with (
                dramatiq_workers(env, tmp_path / "worker.log", processes=1, threads=4),
                covworker_serve(env, tmp_path / "api.log", extra=("--port", str(port))) as served,
            ):
                for sha, args in (
                    (base_sha, ("-f", "base.xml", "-B", "main")),
                    (head_sha, ("-f", "junit.xml", "--report-type", "test_results",
                                "-B", "feature")),
                    (head_sha, ("-f", "head.xml", "-B", "feature", "-P", "7")),
                ):  # fmt: skip
                    done = codecovcli(
                        uploader_env(env), repo, served.url, "upload-process",
                        "-r", REPO, "-C", sha, "-t", token, "-n", "unit", *args,
                    )  # fmt: skip
                    assert done.returncode == 0, done.stdout + done.stderr
                    settle(env, timeout_s=120)
                wait_for(delivered, timeout_s=120)
                with engine.connect() as conn:
                    comment_state = conn.scalar(
                        sa.text(
                            "SELECT d.state FROM pull_deliveries d JOIN commits c "
                            "ON c.id = d.commit_id WHERE c.sha = :sha AND d.target = 'comment' "
                            "ORDER BY d.id DESC LIMIT 1"
                        ),
                        {"sha": head_sha},
                    )
            engine.dispose()
    assert gh.violations() == []
    assert comment_state == "sent"
    (body,) = fake.comments_on(REPO, 7).values()
    assert len(body) <= MAX_COMMENT_CHARS
    assert body.startswith("## [Codecov](") and "Project coverage is" in body
    assert "### :x: 45 Tests Failed:" in body
    assert f"[the commit's page]({public_url}/{REPO}/commit/{head_sha})" in body
    assert body.count("<details>") == body.count("</details>")
