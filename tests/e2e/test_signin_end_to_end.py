"""Signing in with GitHub end to end: ``covworker serve``, real workers,
PostgreSQL and Redis, and a fake GitHub behind Prism.

A repository is added without ``--private``; GitHub says it is private. The
worker learns so while it prepares the commit's feedback, and from then on
the pages answer 404 to anyone, the source never fetched for them. A user
GitHub lets read it signs in (state, code, PKCE verifier, token) and sees
its pages and source; a user without access gets 404; revoked at GitHub,
the user is refused once the cached answer expires.
"""

from __future__ import annotations

import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from tests.support.brokers import settle
from tests.support.fake_github import GITHUB_SPEC, PRISM, prism_proxy
from tests.support.fake_oauth import FakeGitHubOAuth, signin_env
from tests.support.processes import (
    add_repo,
    covworker,
    covworker_serve,
    dramatiq_workers,
    migrated_database,
)

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.integration,
    pytest.mark.timeout(300),
    pytest.mark.skipif(not PRISM.exists(), reason="Prism not installed (.ci/run)"),
]

REPO = "acme/secret"
SHA = "5" * 40
SOURCE = b"password = 'hunter2'\nprint(password)\n"
LCOV = "SF:src/app.py\nDA:1,1\nDA:2,0\nend_of_record\n"


def sign_in(base_url: str, login: str, fake: FakeGitHubOAuth) -> httpx.Client:
    """A browser's trip through covworker and GitHub; the client keeps its cookies."""
    fake.signing_in = login
    browser = httpx.Client(base_url=base_url, follow_redirects=False, timeout=30)
    start = browser.get("/-/signin/github", params={"next": f"/{REPO}"})
    assert start.status_code == 303, start.text
    at_github = httpx.get(start.headers["location"], follow_redirects=False)
    back = urlsplit(at_github.headers["location"])
    done = browser.get(f"{back.path}?{back.query}")
    assert done.status_code == 303 and done.headers["location"] == f"/{REPO}", done.text
    return browser


def test_a_repository_private_on_github_opens_to_the_users_github_lets_read_it(
    tmp_path: Path, namespace: str
) -> None:
    report = tmp_path / "lcov.info"
    report.write_text(LCOV)
    with (
        FakeGitHubOAuth() as fake,
        prism_proxy(GITHUB_SPEC, fake.url, tmp_path / "prism.log") as gh,
    ):
        fake.state.private.add(REPO)
        fake.add_file(REPO, SHA, "src/app.py", SOURCE)
        fake.grant("octocat", REPO)
        fake.grant("mallory")
        env_extra = signin_env(fake, gh.url, access_cache_s=1)
        with migrated_database(namespace, **env_extra) as (_, env):
            add_repo(env, REPO)  # not --private
            with (
                dramatiq_workers(env, tmp_path / "worker.log", processes=1, threads=4),
                covworker_serve(env, tmp_path / "serve.log") as served,
            ):
                uploaded = covworker(
                    env, "upload", "--repo", REPO, "--commit", SHA, "--wait", str(report)
                )
                assert uploaded.returncode == 0, uploaded.stderr
                settle(env, timeout_s=120)
                file_page = f"/{REPO}/commit/{SHA}/file/src/app.py"

                anonymous = [
                    httpx.get(served.url + path).status_code
                    for path in (f"/{REPO}", file_page, f"/api/v1/repos/{REPO}/commits")
                ]
                listed = httpx.get(served.url + "/").text

                octocat = sign_in(served.url, "octocat", fake)
                mallory = sign_in(served.url, "mallory", fake)
                seen = octocat.get(file_page)
                refused = [mallory.get(path).status_code for path in (f"/{REPO}", file_page)]

                fake.revoke("octocat")
                deadline = time.monotonic() + 15
                status = octocat.get(f"/{REPO}").status_code
                while status == 200 and time.monotonic() < deadline:
                    time.sleep(0.2)  # until the 1-second access answer expires
                    status = octocat.get(f"/{REPO}").status_code
                octocat.close()
                mallory.close()

    assert anonymous == [404, 404, 404] and REPO not in listed
    assert seen.status_code == 200 and "hunter2" in seen.text
    assert refused == [404, 404]
    assert status == 404
    # Only octocat's page fetched the source; GitHub's API was used as described.
    assert len(fake.calls("GET", "/contents/src/app.py")) == 1
    assert gh.violations() == []
