"""The pages put together: one 404 for what a request may not see, the
operations page mounted, the security headers on every answer."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from app.api import create_app
from app.embedded import EmbeddedRuntime
from app.settings import Settings
from app.web.access import READ_COOKIE, hash_token
from tests.app.web.conftest import OPS_TOKEN, Upload, csrf_of, lcov

pytestmark = pytest.mark.timeout(60)


SHA1 = "1" * 40


def test_a_private_repository_is_404_without_its_read_token(
    client: TestClient, secret_token: str
) -> None:
    urls = [
        "/acme/secret",
        f"/acme/secret/commit/{SHA1}",
        "/acme/secret/badge.svg",
        "/api/v1/repos/acme/secret/commits",
    ]
    for url in urls:
        assert client.get(url).status_code == 404, url
        assert client.get(url, headers={"Authorization": "Bearer wrong"}).status_code == 404
        assert (
            client.get(url, headers={"Authorization": f"Bearer {secret_token}"}).status_code == 200
        )
    unknown = client.get("/acme/nothing-here")
    assert unknown.status_code == 404
    assert client.get("/acme/secret").text == unknown.text.replace(
        "/acme/nothing-here", "/acme/secret"
    )
    assert "acme/secret" not in client.get("/").text
    signed_in = client.post(
        "/-/login",
        data={"token": secret_token, "next": "/acme/secret", "csrf": csrf_of(client)},
        follow_redirects=False,
    )
    assert signed_in.status_code == 303 and signed_in.headers["location"] == "/acme/secret"
    # The cookie holds the token's hash, never the token itself.
    assert client.cookies.get(READ_COOKIE) == hash_token(secret_token)
    assert client.get("/acme/secret").status_code == 200
    assert "acme/secret" in client.get("/").text


def test_every_response_carries_the_security_headers_and_private_data_is_not_cached(
    client: TestClient, secret_token: str
) -> None:
    for url in ("/", "/api/v1/repos", "/-/login", "/acme/secret/badge.svg", "/healthz"):
        headers = client.get(url).headers
        assert "frame-ancestors 'none'" in headers["content-security-policy"], url
        assert "script-src 'self'" in headers["content-security-policy"], url
        assert headers["x-content-type-options"] == "nosniff", url
        assert headers["x-frame-options"] == "DENY", url
    listing = client.get("/api/v1/repos", headers={"Authorization": f"Bearer {secret_token}"})
    assert [r["name"] for r in listing.json()["repositories"]] == ["acme/secret"]
    assert "private" in listing.headers["cache-control"]


def test_the_operations_page_needs_its_token(client: TestClient, upload: Upload) -> None:
    upload("acme/web", SHA1, {"a.info": lcov("a.py", {1: 1})})
    assert client.get("/-/ops").status_code == 401
    assert client.get("/api/v1/ops", headers={"Authorization": "Bearer nope"}).status_code == 401
    data = client.get("/api/v1/ops", headers={"Authorization": f"Bearer {OPS_TOKEN}"}).json()
    assert data["notifications"][0]["commit"] == SHA1
    assert set(data["broker"]) >= {"ready", "in_flight", "delayed", "dead", "dead_letters"}
    client.post("/-/ops/login", data={"token": OPS_TOKEN, "csrf": csrf_of(client, "/-/ops")})
    page = client.get("/-/ops")
    assert page.status_code == 200 and 'id="ops-live"' in page.text
    assert (
        page.text.count('src="/-/static/ops.js"') == 1
        and "<script" not in page.text.split("</nav>")[0]
    )


def test_the_operations_page_without_a_token_configured_says_how_to_turn_it_on(
    runtime: EmbeddedRuntime,
) -> None:
    settings = Settings(redis_url="redis://unused", database_url=runtime.app.settings.database_url)
    with TestClient(create_app(settings, covworker=runtime.app)) as off:
        page = off.get("/-/ops")
        assert page.status_code == 404
        assert page.headers["content-type"].startswith("text/html")
        assert "COVWORKER_OPS_TOKEN" in page.text and '<link rel="stylesheet"' in page.text
        api = off.get("/api/v1/ops")
        assert api.status_code == 404 and "COVWORKER_OPS_TOKEN" in api.json()["detail"]
