"""Sign-in by read token: the form's CSRF value, bounded input, secure cookies,
redirects within the site."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from app.api import create_app
from app.embedded import EmbeddedRuntime
from app.settings import Settings
from app.web.access import CSRF_COOKIE, READ_COOKIE
from tests.app.web.conftest import Upload, csrf_of

pytestmark = pytest.mark.timeout(60)


def test_a_login_posted_without_the_forms_csrf_value_is_refused_and_sets_no_cookie(
    client: TestClient, secret_token: str
) -> None:
    """Another site cannot sign a visitor in with its own token."""
    csrf_of(client)
    for forged in ({"token": secret_token}, {"token": secret_token, "csrf": "x" * 43}):
        reply = client.post("/-/login", data=forged, follow_redirects=False)
        assert reply.status_code == 403 and "came from another site" in reply.text
        assert READ_COOKIE not in reply.headers.get("set-cookie", "")
    assert client.get("/acme/secret").status_code == 404


def test_a_huge_login_token_is_refused_and_never_echoed_into_a_cookie(client: TestClient) -> None:
    csrf = csrf_of(client)
    reply = client.post("/-/login", data={"token": "t" * 100_000, "csrf": csrf})
    assert reply.status_code == 400 and "set-cookie" not in {
        k for k, v in reply.headers.items() if READ_COOKIE in v
    }
    big = client.post("/-/login", content=b"token=" + b"t" * 2_000_000 + b"&csrf=" + csrf.encode())
    assert big.status_code == 413 and READ_COOKIE not in big.headers.get("set-cookie", "")


def test_a_login_form_with_too_many_fields_is_a_400_not_a_500(client: TestClient) -> None:
    body = "&".join(f"f{n}=1" for n in range(50))
    form = {"content-type": "application/x-www-form-urlencoded"}
    for url in ("/-/login", "/-/ops/login"):
        reply = client.post(url, content=body, headers=form, follow_redirects=False)
        assert reply.status_code == 400, url
        assert READ_COOKIE not in reply.headers.get("set-cookie", "")


def test_cookies_are_secure_when_the_pages_are_reached_over_https(
    runtime: EmbeddedRuntime, upload: Upload
) -> None:
    settings = Settings(
        redis_url="redis://unused",
        database_url=runtime.app.settings.database_url,
        public_url="https://cov.example.com",
    )
    with TestClient(create_app(settings, covworker=runtime.app)) as https:
        reply = https.get("/-/login")
        assert "secure" in reply.headers["set-cookie"].lower()
        csrf = reply.headers["set-cookie"].split(";")[0].split("=", 1)[1]
        signed = https.post(
            "/-/login",
            data={"token": "t", "csrf": csrf},
            headers={"Cookie": f"{CSRF_COOKIE}={csrf}"},  # a Secure cookie, sent over http here
            follow_redirects=False,
        )
        assert signed.status_code == 303
        assert "secure" in signed.headers["set-cookie"].lower()


def test_the_login_form_only_redirects_within_the_site(client: TestClient) -> None:
    reply = client.post(
        "/-/login",
        data={"token": "t", "next": "//evil.example/", "csrf": csrf_of(client)},
        follow_redirects=False,
    )
    assert reply.headers["location"] == "/"
