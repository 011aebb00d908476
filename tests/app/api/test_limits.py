"""Request bodies bounded while they stream (``LimitRequestBodies``), NUL
bytes refused in the URL, and the headers every response carries
(``SecurityHeaders``), on a small app of their own."""

from __future__ import annotations

from collections.abc import Iterator

from fastapi import FastAPI, Request
from fastapi.responses import PlainTextResponse
from fastapi.testclient import TestClient

from app.api.limits import CONTENT_SECURITY_POLICY, LimitRequestBodies, SecurityHeaders
from tests.app.api.conftest import SHA, auth

LIMIT = 100


def limited_app() -> tuple[FastAPI, list[str]]:
    """An app whose routes answer the size of the body they read, behind the
    middleware; and the list of paths its handlers were called for."""
    api = FastAPI()
    called: list[str] = []

    async def size(request: Request) -> PlainTextResponse:
        called.append(request.url.path)
        return PlainTextResponse(str(len(await request.body())))

    for path, method in [
        ("/echo", "POST"),
        ("/upload/v4", "POST"),
        ("/upload/v2", "POST"),
        ("/upload/payload/{upload_id}", "PUT"),
    ]:
        api.add_api_route(path, size, methods=[method])

    @api.get("/framed")
    def framed() -> PlainTextResponse:
        return PlainTextResponse("ok", headers={"X-Frame-Options": "SAMEORIGIN"})

    api.add_middleware(LimitRequestBodies, max_bytes=LIMIT)
    api.add_middleware(SecurityHeaders)
    return api, called


def chunks(total: int) -> Iterator[bytes]:
    """A body of ``total`` bytes without a Content-Length (sent chunked)."""
    for _ in range(total // 10):
        yield b"x" * 10


def test_a_body_up_to_the_limit_reaches_the_handler_declared_or_streamed() -> None:
    api, called = limited_app()
    client = TestClient(api)
    assert client.post("/echo", content=b"x" * LIMIT).text == str(LIMIT)
    assert client.post("/echo", content=chunks(LIMIT)).text == str(LIMIT)
    assert called == ["/echo", "/echo"]


def test_a_declared_length_over_the_limit_is_413_and_the_handler_never_runs() -> None:
    api, called = limited_app()
    reply = TestClient(api).post("/echo", content=b"x" * (LIMIT + 1))
    assert reply.status_code == 413
    assert reply.json()["detail"] == (
        f"the request body of {LIMIT + 1} bytes is over the limit of {LIMIT} bytes "
        "(COVWORKER_MAX_REQUEST_BODY_BYTES)"
    )
    assert reply.headers["connection"] == "close"
    assert called == []


def test_a_streamed_body_is_cut_off_with_413_once_past_the_limit() -> None:
    api, _ = limited_app()
    reply = TestClient(api).post("/echo", content=chunks(10 * LIMIT))
    assert reply.status_code == 413
    assert f"more than {LIMIT} bytes" in reply.json()["detail"]


def test_payload_routes_are_bounded_where_they_are_stored_not_here() -> None:
    api, _ = limited_app()
    client = TestClient(api)
    big = b"x" * (10 * LIMIT)
    assert client.put("/upload/payload/3", content=big).text == str(len(big))
    assert client.post("/upload/v2", content=big).text == str(len(big))
    assert client.post("/upload/v4", content=big).status_code == 413  # a JSON-sized call


def test_a_nul_byte_in_the_path_or_the_query_is_400() -> None:
    api, called = limited_app()
    client = TestClient(api)
    for url in ("/ec%00ho", "/echo?slug=a%00b"):
        reply = client.post(url, content=b"x")
        assert reply.status_code == 400, url
        assert reply.json()["detail"] == "the URL contains a NUL byte (%00)"
    assert called == []


def test_every_response_carries_the_security_headers_refusals_included() -> None:
    api, _ = limited_app()
    client = TestClient(api)
    for reply in (
        client.post("/echo", content=b"x"),
        client.post("/echo", content=b"x" * (LIMIT + 1)),
        client.get("/nowhere"),
    ):
        assert reply.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        assert reply.headers["x-content-type-options"] == "nosniff"
        assert reply.headers["x-frame-options"] == "DENY"
        assert reply.headers["referrer-policy"] == "same-origin"


def test_a_header_the_response_sets_itself_is_kept_not_doubled() -> None:
    api, _ = limited_app()
    reply = TestClient(api).get("/framed")
    assert reply.headers.get_list("x-frame-options") == ["SAMEORIGIN"]


def test_a_nul_byte_in_a_slug_is_a_400_not_a_500(client: TestClient, token: str) -> None:
    reply = client.post(
        "/upload/github/acme::::w%00eb/commits", json={"commitid": SHA}, headers=auth(token)
    )
    assert reply.status_code == 400 and "NUL" in reply.json()["detail"]
