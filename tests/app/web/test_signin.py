"""Signing in with GitHub: the OAuth flow against a fake GitHub, and the pages
of a repository private on GitHub for users it lets read it, and for others.

The fake's API calls (``/user``, ``/repos/{owner}/{repo}`` with the user's
token, and the service's own) go through Prism over GitHub's OpenAPI
description; its OAuth pages are reached directly, as a browser does
(tests/support/fake_oauth.py).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from app.api import create_app
from app.db.models import Repository
from app.embedded import EmbeddedRuntime
from app.providers import Providers
from app.providers.github import GitHub, TokenAuth
from app.providers.http import ProviderHttp
from app.settings import Settings
from app.web.sessions import SESSION_COOKIE, STATE_COOKIE
from tests.app.web.conftest import Upload, lcov
from tests.support.fake_github import GITHUB_SPEC, PrismProxy, needs_prism, prism_proxy
from tests.support.fake_oauth import CLIENT_ID, CLIENT_SECRET, FakeGitHubOAuth, s256, token_request

pytestmark = [pytest.mark.timeout(120), needs_prism]

SHA = "1" * 40
SECRET = "acme/secret"
#: Seconds an access answer is trusted here: short, so the test sees it expire.
ACCESS_CACHE_S = 1


@dataclass
class GitHubWithSignIn:
    fake: FakeGitHubOAuth
    prism: PrismProxy
    client: TestClient
    runtime: EmbeddedRuntime


@pytest.fixture
def github(tmp_path: Path, runtime: EmbeddedRuntime) -> Iterator[GitHubWithSignIn]:
    with (
        FakeGitHubOAuth() as fake,
        prism_proxy(GITHUB_SPEC, fake.url, tmp_path / "prism.log") as prism,
    ):
        http = ProviderHttp(prism.url, timeout_s=10)
        runtime.app.services.providers = Providers(
            {"github": GitHub(http, TokenAuth("t"))}, http.counter
        )
        settings = Settings(
            redis_url="redis://unused",
            database_url=runtime.app.settings.database_url,
            github_oauth_client_id=CLIENT_ID,
            github_oauth_client_secret=CLIENT_SECRET,
            github_url=fake.url,
            github_api_url=prism.url,
            signin_access_cache_s=ACCESS_CACHE_S,
        )
        with TestClient(create_app(settings, covworker=runtime.app)) as client:
            yield GitHubWithSignIn(fake, prism, client, runtime)
        runtime.app.services.providers = Providers.none()
        assert prism.violations() == []


def sign_in(gh: GitHubWithSignIn, login: str | None, next_path: str) -> httpx.Response:
    """The browser's trip: covworker, GitHub's authorization page, covworker's callback."""
    gh.fake.signing_in = login
    start = gh.client.get("/-/signin/github", params={"next": next_path}, follow_redirects=False)
    assert start.status_code == 303
    at_github = httpx.get(start.headers["location"], follow_redirects=False)
    assert at_github.status_code == 302
    back = urlsplit(at_github.headers["location"])
    return gh.client.get(f"{back.path}?{back.query}", follow_redirects=False)


def private_repository(gh: GitHubWithSignIn, upload: Upload) -> None:
    gh.fake.state.private.add(SECRET)
    upload(SECRET, SHA, {"a.info": lcov("src/a.py", {1: 1, 2: 0})})
    gh.fake.add_file(SECRET, SHA, "src/a.py", b"password = 'hunter2'\nuse(password)\n")


def access_reads(gh: GitHubWithSignIn) -> int:
    """Calls made with a user's token to read the repository."""
    return sum(
        1 for c in gh.fake.calls("GET") if c.path == f"/repos/{SECRET}" and c.body is not None
    )


def test_a_user_github_lets_read_a_private_repository_sees_its_pages_and_source(
    github: GitHubWithSignIn, upload: Upload
) -> None:
    gh = github
    private_repository(gh, upload)
    gh.fake.grant("octocat", SECRET)
    assert gh.client.get(f"/{SECRET}").status_code == 404  # private on GitHub, learned

    done = sign_in(gh, "octocat", f"/{SECRET}")

    assert done.status_code == 303 and done.headers["location"] == f"/{SECRET}"
    cookie = done.headers["set-cookie"]
    assert SESSION_COOKIE in cookie and "HttpOnly" in cookie and "SameSite=lax" in cookie
    assert "Secure" not in cookie  # http://testserver; behind HTTPS it is (test_forms)
    # The code went back with the verifier whose S256 GitHub was shown.
    (authorize,) = gh.fake.calls("GET", "/login/oauth/authorize")
    (exchange,) = gh.fake.calls("POST", "/login/oauth/access_token")
    sent = token_request(str(exchange.body))
    challenge = parse_qs(authorize.query)["code_challenge"][0]
    assert s256(sent["code_verifier"]) == challenge and sent["grant_type"] == "authorization_code"
    assert gh.fake.oauth.refusals == []
    page = gh.client.get(f"/{SECRET}/commit/{SHA}/file/src/a.py")
    assert page.status_code == 200 and "hunter2" in page.text
    assert gh.client.get(f"/api/v1/repos/{SECRET}/commits").status_code == 200
    assert SECRET in gh.client.get("/").text
    assert "octocat" in gh.client.get("/-/signin").text


def test_a_signed_in_user_without_read_access_gets_404(
    github: GitHubWithSignIn, upload: Upload
) -> None:
    gh = github
    private_repository(gh, upload)
    gh.fake.grant("mallory")  # signed in to GitHub, no access to the repository

    assert sign_in(gh, "mallory", "/").status_code == 303

    assert gh.client.get(f"/{SECRET}").status_code == 404
    assert gh.client.get(f"/{SECRET}/commit/{SHA}/file/src/a.py").status_code == 404
    assert gh.client.get(f"/api/v1/repos/{SECRET}/commits").status_code == 404
    assert SECRET not in gh.client.get("/").text
    assert gh.fake.calls("GET", "/contents/src/") == []


def test_a_revoked_user_is_refused_once_the_cached_answer_expires(
    github: GitHubWithSignIn, upload: Upload
) -> None:
    gh = github
    private_repository(gh, upload)
    gh.fake.grant("octocat", SECRET)
    sign_in(gh, "octocat", "/")
    assert gh.client.get(f"/{SECRET}").status_code == 200
    reads = access_reads(gh)

    gh.fake.revoke("octocat")
    cached = gh.client.get(f"/{SECRET}").status_code  # within the cache: not asked again
    assert access_reads(gh) == reads
    redis = gh.runtime.app.services.redis
    deadline = time.monotonic() + 10
    while redis.keys("*:signin:access:*") and time.monotonic() < deadline:
        time.sleep(0.05)  # the condition: the answer's key expired (its TTL)

    after = gh.client.get(f"/{SECRET}")

    assert cached == 200
    assert after.status_code == 404 and access_reads(gh) == reads + 1
    # GitHub said 401 (the token is revoked): the session is over.
    assert redis.keys("*:signin:session:*") == []


def test_a_callback_whose_state_this_browser_did_not_start_is_refused(
    github: GitHubWithSignIn,
) -> None:
    gh = github
    gh.fake.signing_in = "octocat"
    gh.fake.grant("octocat")
    start = gh.client.get("/-/signin/github", follow_redirects=False)
    back = urlsplit(
        httpx.get(start.headers["location"], follow_redirects=False).headers["location"]
    )
    query = parse_qs(back.query)

    forged = gh.client.get(
        back.path, params={"code": query["code"][0], "state": "x" * 43}, follow_redirects=False
    )
    gh.client.cookies.delete(STATE_COOKIE)
    cookieless = gh.client.get(f"{back.path}?{back.query}", follow_redirects=False)

    assert forged.status_code == cookieless.status_code == 403
    assert SESSION_COOKIE not in forged.headers.get("set-cookie", "")
    assert gh.fake.calls("POST", "/login/oauth/access_token") == []  # no code spent


def test_a_state_is_good_for_one_callback(github: GitHubWithSignIn) -> None:
    gh = github
    gh.fake.grant("octocat")
    gh.fake.signing_in = "octocat"
    start = gh.client.get("/-/signin/github", follow_redirects=False)
    back = urlsplit(
        httpx.get(start.headers["location"], follow_redirects=False).headers["location"]
    )
    state_cookie = gh.client.cookies.get(STATE_COOKIE)

    first = gh.client.get(f"{back.path}?{back.query}", follow_redirects=False)
    gh.client.cookies.set(STATE_COOKIE, str(state_cookie))
    replay = gh.client.get(f"{back.path}?{back.query}", follow_redirects=False)

    assert first.status_code == 303 and replay.status_code == 403


def test_a_code_github_refuses_signs_nobody_in(github: GitHubWithSignIn) -> None:
    gh = github
    gh.fake.grant("octocat")
    gh.fake.signing_in = "octocat"
    start = gh.client.get("/-/signin/github", follow_redirects=False)
    back = urlsplit(
        httpx.get(start.headers["location"], follow_redirects=False).headers["location"]
    )
    query = parse_qs(back.query)
    gh.fake.oauth.codes.clear()  # expired at GitHub

    done = gh.client.get(back.path, params={"code": query["code"][0], "state": query["state"][0]})

    assert done.status_code == 502 and "bad_verification_code" in done.text
    assert gh.fake.oauth.refusals == ["bad_verification_code"]
    assert SESSION_COOKIE not in done.headers.get("set-cookie", "")


def test_a_user_who_says_no_at_github_is_told_so(github: GitHubWithSignIn) -> None:
    done = sign_in(github, None, "/")

    assert done.status_code == 400 and "access_denied" in done.text


def test_signing_out_ends_the_session(github: GitHubWithSignIn, upload: Upload) -> None:
    gh = github
    private_repository(gh, upload)
    gh.fake.grant("octocat", SECRET)
    sign_in(gh, "octocat", "/")
    page = gh.client.get("/-/signin").text
    csrf = page.split('name="csrf" value="', 1)[1].split('"', 1)[0]

    out = gh.client.post("/-/signout", data={"csrf": csrf}, follow_redirects=False)

    assert out.status_code == 303
    assert gh.runtime.app.services.redis.keys("*:signin:session:*") == []
    assert gh.client.get(f"/{SECRET}").status_code == 404


def test_the_repository_list_offers_the_sign_in_and_names_who_is_signed_in(
    github: GitHubWithSignIn,
) -> None:
    gh = github
    gh.fake.grant("octocat")
    before = gh.client.get("/").text

    sign_in(gh, "octocat", "/")
    after = gh.client.get("/").text

    assert '<a href="/-/signin">Sign in with GitHub</a>' in before
    assert "Signed in as <strong>octocat</strong> on GitHub" in after
    assert "Sign in with" not in after and '<a href="/-/signin">Sign out</a>' in after


def test_without_oauth_settings_the_sign_in_page_is_the_read_token_form(
    client: TestClient,
) -> None:
    answer = client.get("/-/signin?next=/acme/web", follow_redirects=False)

    assert answer.status_code == 303 and answer.headers["location"] == "/-/login?next=/acme/web"
    assert client.get("/-/signin/github", follow_redirects=False).status_code == 404
    assert "/-/signin" not in client.get("/").text  # the repository list as before


def test_a_read_token_still_opens_a_repository_private_on_github(
    github: GitHubWithSignIn, upload: Upload, runtime: EmbeddedRuntime
) -> None:
    from app.web.access import make_private

    gh = github
    private_repository(gh, upload)
    with runtime.app.services.sessions.begin() as session:
        token = make_private(session, SECRET)
        assert session.scalar(sa.select(Repository.provider_private)) is True

    answer = gh.client.get(
        f"/api/v1/repos/{SECRET}/commits", headers={"Authorization": f"Bearer {token}"}
    )

    assert answer.status_code == 200
