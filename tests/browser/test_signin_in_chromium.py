"""Signing in with GitHub in Chromium: the sign-in page, GitHub's approval
(a fake GitHub, its API behind Prism), the private repository's pages and
source, and signing out; each page without console errors or serious axe
violations.

The module's stack is the browser tests' (``covworker serve``, a dramatiq
worker, PostgreSQL, Redis) with GitHub sign-in set up and pull-request
feedback on, so the worker learns from GitHub that the repository, added
without ``--private``, is private.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.browser.conftest import Stack, Visit, _stack
from tests.browser.test_pages_in_chromium import check_page
from tests.support.brokers import settle
from tests.support.fake_github import GITHUB_SPEC, PRISM, prism_proxy
from tests.support.fake_oauth import FakeGitHubOAuth, signin_env
from tests.support.services import delete_namespace, redis_test_url, require_redis

pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.skipif(not PRISM.exists(), reason="Prism not installed (.ci/run)"),
]

REPO = "acme/vault"
SHA = "7" * 40
SOURCE = b"key = 'hunter2'\nprint(key)\n"


@pytest.fixture(scope="module")
def fake_github(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeGitHubOAuth]:
    with FakeGitHubOAuth() as fake:
        yield fake


@pytest.fixture(scope="module")
def stack(
    tmp_path_factory: pytest.TempPathFactory, fake_github: FakeGitHubOAuth
) -> Iterator[Stack]:
    """The browser tests' stack, signing in with the fake GitHub."""
    require_redis()
    tmp = tmp_path_factory.mktemp("signin")
    namespace = f"cwt-{uuid.uuid4().hex[:10]}"
    with prism_proxy(GITHUB_SPEC, fake_github.url, tmp / "prism.log") as prism:
        try:
            yield from _stack(tmp, namespace, **signin_env(fake_github, prism.url))
        finally:
            delete_namespace(redis_test_url(), namespace)
        assert prism.violations() == []


@pytest.fixture(scope="module")
def private_repo(stack: Stack, fake_github: FakeGitHubOAuth) -> str:
    fake_github.state.private.add(REPO)
    fake_github.add_file(REPO, SHA, "src/vault.py", SOURCE)
    fake_github.grant("octocat", REPO)
    report = Path(stack.tmp) / "vault.info"
    report.write_text("SF:src/vault.py\nDA:1,1\nDA:2,0\nend_of_record\n")
    stack.upload(REPO, SHA, [report])
    stack.wait_settled(REPO, SHA)
    settle(stack.env, timeout_s=120)  # the feedback too: it reads the repository from GitHub
    return REPO


def test_a_reader_signs_in_with_github_sees_the_private_source_and_signs_out(
    visit: Visit, private_repo: str, fake_github: FakeGitHubOAuth
) -> None:
    fake_github.signing_in = "octocat"
    visit.open(f"/{REPO}", expect_status=404)
    visit.page.get_by_role("link", name="sign in").click()
    visit.page.wait_for_url(re.compile(r"/-/signin\?next="))
    check_page(visit, "signin")

    visit.page.get_by_role("link", name="Sign in with GitHub").click()
    visit.page.wait_for_url(re.compile(f"/{REPO}$"))

    assert REPO in visit.page.locator("h1").inner_text()
    check_page(visit, "signin-private-repository")
    visit.open(f"/{REPO}/commit/{SHA}/file/src/vault.py")
    assert "hunter2" in visit.page.locator("main").inner_text()
    visit.open("/")
    assert "Signed in as octocat" in visit.page.locator("#signed-in").inner_text()
    assert REPO in visit.page.locator("main").inner_text()
    check_page(visit, "signed-in-repositories")
    visit.page.locator("#signed-in").get_by_role("link", name="Sign out").click()
    visit.page.wait_for_url(re.compile(r"/-/signin$"))
    assert "octocat" in visit.page.locator("main").inner_text()
    check_page(visit, "signed-in")

    visit.page.get_by_role("button", name="Sign out").click()
    visit.page.wait_for_url(re.compile(r"/$"))
    assert REPO not in visit.page.locator("main").inner_text()
    visit.open(f"/{REPO}", expect_status=404)
    visit.no_errors()


def test_a_user_github_does_not_let_read_it_gets_404_after_signing_in(
    visit: Visit, private_repo: str, fake_github: FakeGitHubOAuth
) -> None:
    fake_github.grant("mallory")
    fake_github.signing_in = "mallory"
    visit.open(f"/-/signin?next=/{REPO}")
    visit.page.get_by_role("link", name="Sign in with GitHub").click()
    visit.page.wait_for_url(re.compile(f"/{REPO}$"))

    visit.expected.add(404)
    assert visit.page.locator("h1").inner_text() == "Not found"
    assert "hunter2" not in visit.page.content()
    visit.no_errors()
