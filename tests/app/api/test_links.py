"""The URLs handed to uploaders: which base they name (never one a Host
header of a stranger's choosing shapes), the signed PUT URL and the result page."""

from __future__ import annotations

from dataclasses import replace
from urllib.parse import parse_qs, urlsplit

import pytest
from fastapi import Request
from fastapi.testclient import TestClient

from app.api.context import ApiContext
from app.api.errors import ApiError
from app.api.links import base_url, put_url, result_url
from app.embedded import EmbeddedRuntime
from tests.app.api.conftest import BASE, COVERAGE_BODY, auth, counts


def request(
    host: str, path: str = "/upload/github/a::::b/upload-coverage", root: str = ""
) -> Request:
    return Request(
        {
            "type": "http",
            "method": "POST",
            "scheme": "http",
            "path": path,
            "root_path": root,
            "query_string": b"",
            "headers": [(b"host", host.encode())],
            "server": ("unused", 80),
        }
    )


@pytest.fixture
def ctx(client: TestClient) -> ApiContext:
    """The running app's context (allowed hosts: testserver)."""
    context: ApiContext = client.app.state.ctx  # type: ignore[attr-defined]
    return context


def with_settings(ctx: ApiContext, **changes: object) -> ApiContext:
    return replace(ctx, settings=ctx.settings.model_copy(update=changes))


def test_the_base_is_the_url_the_client_used_when_its_host_is_allowed(ctx: ApiContext) -> None:
    assert base_url(request("testserver"), ctx) == "http://testserver"
    assert base_url(request("TestServer:8000", root="/cov"), ctx) == "http://TestServer:8000/cov"
    six = with_settings(ctx, allowed_hosts="::1")
    assert base_url(request("[::1]:8000"), six) == "http://[::1]:8000"


def test_the_public_url_is_the_base_whatever_the_host(ctx: ApiContext) -> None:
    public = with_settings(ctx, public_url="https://cov.example/x/")
    assert base_url(request("evil.example"), public) == "https://cov.example/x"


def test_a_star_allows_any_host(ctx: ApiContext) -> None:
    assert base_url(request("any.example"), with_settings(ctx, allowed_hosts="*")) == (
        "http://any.example"
    )


def test_another_host_is_400_naming_the_setting_in_text_for_the_legacy_routes(
    ctx: ApiContext,
) -> None:
    for path, plain in [("/upload/github/a::::b/commits", False), ("/upload/v4", True)]:
        with pytest.raises(ApiError) as refused:
            base_url(request("evil.example", path), ctx)
        assert refused.value.status == 400
        assert "'evil.example' is not in COVWORKER_ALLOWED_HOSTS" in refused.value.detail
        assert refused.value.plain is plain, path


def test_the_put_url_is_signed_for_its_upload(ctx: ApiContext) -> None:
    url = urlsplit(put_url(request("testserver"), ctx, 42))
    assert (url.scheme, url.netloc, url.path) == ("http", "testserver", "/upload/payload/42")
    query = {k: v[0] for k, v in parse_qs(url.query).items()}
    assert ctx.signer.check(42, int(query["expires"]), query["sig"]) == ""
    assert ctx.signer.check(43, int(query["expires"]), query["sig"]) != ""


def test_the_result_url_names_the_commit_page_quoting_the_name(ctx: ApiContext) -> None:
    page = result_url(request("testserver"), ctx, "acme/we b", "a" * 40)
    assert page == f"http://testserver/acme/we%20b/commit/{'a' * 40}"


def test_a_host_outside_the_allowed_hosts_cannot_shape_the_put_url(
    client: TestClient, runtime: EmbeddedRuntime, token: str
) -> None:
    reply = client.post(
        f"{BASE}/upload-coverage",
        json=COVERAGE_BODY,
        headers={**auth(token), "Host": "evil.example"},
    )
    assert reply.status_code == 400 and "COVWORKER_PUBLIC_URL" in reply.json()["detail"]
    assert counts(runtime) == (0, 0)
