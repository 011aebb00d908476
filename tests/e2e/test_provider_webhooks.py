"""A pull request opened after its CI finished, end to end: real ``covworker
serve`` and ``dramatiq app.actors`` processes on real Redis and PostgreSQL,
the fake GitHub behind Prism (GitHub's OpenAPI description), and GitHub's own
``pull_request`` example, signed as GitHub signs it.

Push, CI uploads the base and the head (no pull request number, as a push
build does), both settle and the head gets its statuses; then the pull
request is opened and GitHub posts the event: the pull request gets its one
comment and its statuses within seconds. A redelivery writes nothing more,
and an event with a bad signature is refused 401 with nothing stored.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa

from app.db.models import Pull, Repository
from tests.support.brokers import settle
from tests.support.fake_github import GITHUB_SPEC, PRISM, FakeGitHub, FakePull, prism_proxy
from tests.support.processes import add_repo, covworker_serve, dramatiq_workers, migrated_database
from tests.support.provider_events import github_headers, github_pull_event

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.integration,
    pytest.mark.timeout(600),
    pytest.mark.skipif(not PRISM.exists(), reason="Prism not installed (.ci/run)"),
]

REPO, SECRET = "acme/calc", "e2e-hook-secret"
BASE, HEAD = "b" * 40, "e" * 40
LCOV = b"SF:calc/ops.py\nDA:1,1\nDA:2,1\nDA:3,0\nDA:4,1\nend_of_record\n"
PATCH = "@@ -1,2 +1,4 @@\n line\n+added\n+added\n line\n"


def wait_for(condition: Callable[[], bool], timeout_s: float = 60.0) -> float:
    """Poll ``condition``; the seconds it took to hold."""
    started = time.monotonic()
    while not condition():
        assert time.monotonic() - started < timeout_s, "timed out waiting for a condition"
        time.sleep(0.05)
    return time.monotonic() - started


def upload(client: httpx.Client, token: str, sha: str, branch: str) -> None:
    """One coverage upload as codecov-cli makes it: upload-coverage, then the PUT."""
    created = client.post(
        "/upload/github/acme::::calc/upload-coverage",
        json={"commitid": sha, "branch": branch, "code": "default", "flags": ["unit"]},
        headers={"Authorization": f"token {token}"},
    )
    assert created.status_code == 201, created.text
    payload = json.dumps(
        {"coverage_files": [{"filename": "coverage.info", "format": "text", "data": LCOV.decode()}]}
    )
    put = httpx.put(created.json()["raw_upload_location"], content=payload.encode())
    assert put.status_code == 200, put.text


def test_a_pull_request_opened_after_ci_gets_its_comment_and_statuses_from_githubs_event(
    tmp_path: Path, namespace: str
) -> None:
    with (
        FakeGitHub() as fake,
        prism_proxy(GITHUB_SPEC, fake.url, tmp_path / "prism.log") as gh,
        migrated_database(
            namespace,
            COVWORKER_UPLOAD_URL_SECRET="e2e-secret",
            COVWORKER_GITHUB_TOKEN="ghp_e2e",
            COVWORKER_GITHUB_API_URL=gh.url,
            COVWORKER_GITHUB_WEBHOOK_SECRET=SECRET,
        ) as (db_url, env),
    ):
        token = add_repo(env, REPO)
        engine = sa.create_engine(db_url)
        fake.add_diff(REPO, BASE, HEAD, [("calc/ops.py", "modified", PATCH)])
        fake.state.default_branches[REPO] = "trunk"
        with (
            dramatiq_workers(env, tmp_path / "worker.log", processes=1, threads=4),
            covworker_serve(env, tmp_path / "api.log") as served,
            httpx.Client(base_url=served.url, timeout=30) as client,
        ):
            upload(client, token, BASE, "trunk")
            settle(env, timeout_s=120)
            upload(client, token, HEAD, "feature")
            settle(env, timeout_s=120)
            wait_for(lambda: len(fake.state.statuses.get((REPO, HEAD), [])) >= 2)
            assert fake.comments_on(REPO, 7) == {}  # no pull request yet: statuses only
            statuses_before = len(fake.state.statuses[(REPO, HEAD)])

            fake.add_pull(REPO, FakePull(7, BASE, "trunk", HEAD, "feature"))
            body = json.dumps(
                github_pull_event(
                    "opened", REPO, 7, base=("trunk", BASE), head=("feature", HEAD),
                    default_branch="trunk",
                )
            ).encode()  # fmt: skip
            forged = client.post(
                "/webhooks/github", content=body, headers=github_headers(body, "not the secret")
            )
            with engine.connect() as conn:
                stored_after_forgery = conn.scalar(sa.select(sa.func.count()).select_from(Pull))
            opened = client.post(
                "/webhooks/github", content=body, headers=github_headers(body, SECRET)
            )
            took = wait_for(lambda: len(fake.comments_on(REPO, 7)) == 1)
            settle(env, timeout_s=120)
            writes = len(fake.calls("POST")) + len(fake.calls("PATCH"))
            redelivered = client.post(
                "/webhooks/github", content=body, headers=github_headers(body, SECRET)
            )
            settle(env, timeout_s=120)
            writes_after = len(fake.calls("POST")) + len(fake.calls("PATCH"))
        with engine.connect() as conn:
            default = conn.execute(
                sa.select(Repository.default_branch, Repository.default_branch_source)
            ).one()
        engine.dispose()

    assert gh.violations() == []
    assert forged.status_code == 401 and stored_after_forgery == 0
    assert opened.status_code == 200 and redelivered.status_code == 200, redelivered.text
    assert took < 10, f"the comment took {took:.1f} s"
    assert len(fake.comments_on(REPO, 7)) == 1 and writes_after == writes
    pull_statuses = fake.state.statuses[(REPO, HEAD)][statuses_before:]
    assert sorted(s["context"] for s in pull_statuses) == ["codecov/patch", "codecov/project"]
    assert tuple(default) == ("trunk", "provider")
