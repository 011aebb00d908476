"""Rate limits and failures of a provider call become typed errors, never loops."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from app.providers import (
    AccessDenied,
    ContentTooLarge,
    ProviderRejected,
    ProviderUnavailable,
    RateLimited,
)
from app.providers.http import SECONDARY_LIMIT_WAIT_S, ProviderHttp, paged, retry_after_s

NOW = 1_700_000_000.0


def http(handler: httpx.MockTransport) -> ProviderHttp:
    return ProviderHttp("https://api.example", timeout_s=1, transport=handler, clock=lambda: NOW)


def call(client: ProviderHttp, *, missing_ok: bool = False) -> httpx.Response | None:
    return client.request(
        "GET", "/x", kind="pull", headers={}, credential="t", repo="o/r", missing_ok=missing_ok
    )


def answering(
    status: int, headers: dict[str, str] | None = None, body: object = None
) -> ProviderHttp:
    return http(
        httpx.MockTransport(lambda request: httpx.Response(status, headers=headers, json=body))
    )


def test_retry_after_in_seconds_or_as_a_date_is_obeyed() -> None:
    assert retry_after_s({"retry-after": "30"}, NOW) == 30
    assert retry_after_s({"retry-after": "Tue, 14 Nov 2023 22:14:20 GMT"}, NOW) == 60
    assert (
        retry_after_s({"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(NOW) + 90)}, NOW)
        == 90
    )
    assert (
        retry_after_s({"ratelimit-remaining": "0", "ratelimit-reset": str(int(NOW) + 5)}, NOW) == 5
    )
    assert retry_after_s({"x-ratelimit-remaining": "10"}, NOW) is None


def test_a_primary_rate_limit_waits_until_the_reset() -> None:
    client = answering(
        403,
        {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(NOW) + 120)},
        {"message": "API rate limit exceeded"},
    )
    with pytest.raises(RateLimited) as raised:
        call(client)
    assert raised.value.retry_in_s == 120


def test_a_secondary_rate_limit_without_headers_waits_a_minute() -> None:
    client = answering(403, {}, {"message": "You have exceeded a secondary rate limit."})
    with pytest.raises(RateLimited) as raised:
        call(client)
    assert raised.value.retry_in_s == SECONDARY_LIMIT_WAIT_S


def test_a_429_with_retry_after_waits_that_long() -> None:
    with pytest.raises(RateLimited) as raised:
        call(answering(429, {"retry-after": "7"}))
    assert raised.value.retry_in_s == 7


def test_an_exhausted_limit_seen_on_a_success_blocks_later_calls_without_sending_them() -> None:
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(
            200, headers={"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(NOW) + 60)}
        )

    client = http(httpx.MockTransport(handler))
    assert call(client) is not None
    with pytest.raises(RateLimited) as raised:
        call(client)
    assert raised.value.retry_in_s == 60
    assert len(sent) == 1


@pytest.mark.parametrize("status", [401, 403, 404])
def test_no_access_to_the_repository_is_access_denied(status: int) -> None:
    with pytest.raises(AccessDenied) as raised:
        call(answering(status, {}, {"message": "Bad credentials"}))
    assert raised.value.status_code == status
    assert "Bad credentials" in str(raised.value)


def test_a_404_for_something_that_may_be_gone_is_none() -> None:
    assert call(answering(404, {}, {"message": "Not Found"}), missing_ok=True) is None


@pytest.mark.parametrize("status", [500, 502, 503, 504])
def test_a_server_error_is_unavailable(status: int) -> None:
    with pytest.raises(ProviderUnavailable):
        call(answering(status))


def test_a_timeout_is_unavailable() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    with pytest.raises(ProviderUnavailable, match="timed out"):
        call(http(httpx.MockTransport(handler)))


def test_a_request_the_provider_refuses_is_rejected_not_retried() -> None:
    with pytest.raises(ProviderRejected, match="Validation Failed"):
        call(answering(422, {}, {"message": "Validation Failed"}))


def test_a_listing_is_read_a_page_at_a_time_until_a_short_page_or_the_cap() -> None:
    listing = list(range(250))
    asked: list[dict[str, int]] = []

    def page(params: dict[str, int]) -> list[int]:
        asked.append(params)
        start = (params["page"] - 1) * params["per_page"]
        return listing[start : start + params["per_page"]]

    assert paged(page, per_page=100, max_items=1000) == listing
    assert [p["page"] for p in asked] == [1, 2, 3]  # the third, short, is the last
    asked.clear()
    assert paged(page, per_page=100, max_items=200) == listing[:200]
    assert [p["page"] for p in asked] == [1, 2]  # the cap: no third call
    asked.clear()
    assert paged(page, per_page=50, max_items=120) == listing[:120]
    assert len(asked) == 3  # a cap between pages reads the page it falls in


def streaming(
    status: int, chunks: int, chunk: bytes, headers: dict[str, str] | None = None
) -> tuple[ProviderHttp, list[int]]:
    """A provider answering ``chunks`` chunks, without a length; and how many it sent."""
    sent = [0]

    def body() -> Iterator[bytes]:
        for _ in range(chunks):
            sent[0] += 1
            yield chunk

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, headers=headers, content=body())

    return http(httpx.MockTransport(answer)), sent


def bounded(client: ProviderHttp, max_bytes: int) -> httpx.Response | None:
    return client.request(
        "GET", "/x", kind="contents", headers={}, credential="t", repo="o/r", max_bytes=max_bytes
    )


def test_an_answer_past_its_bound_is_refused_while_it_streams() -> None:
    client, sent = streaming(200, chunks=20 * 1024, chunk=b"x" * 1024)  # 20 MiB
    with pytest.raises(ContentTooLarge, match="answered more than 262144 bytes") as refused:
        bounded(client, 256 * 1024)
    assert refused.value.limit == 256 * 1024
    assert sent[0] <= 257  # read no further than the bound


def test_an_answer_within_its_bound_is_read_whole() -> None:
    client, _ = streaming(200, chunks=256, chunk=b"y" * 1024)
    answer = bounded(client, 256 * 1024)
    assert answer is not None and answer.content == b"y" * 256 * 1024


def test_a_declared_length_past_the_bound_is_refused_before_the_body() -> None:
    client, sent = streaming(200, chunks=3, chunk=b"z", headers={"Content-Length": "3"})
    with pytest.raises(ContentTooLarge):
        bounded(client, 2)
    assert sent[0] == 0


def test_a_packed_answer_counts_as_it_unpacks() -> None:
    import gzip

    packed = gzip.compress(b"\0" * (8 * 1024 * 1024))  # 8 MiB in ~8 KiB
    client, _ = streaming(200, chunks=1, chunk=packed, headers={"Content-Encoding": "gzip"})
    with pytest.raises(ContentTooLarge):
        bounded(client, 256 * 1024)


def test_an_error_answer_is_read_up_to_its_own_bound_and_still_named() -> None:
    client, sent = streaming(422, chunks=10 * 1024, chunk=b"e" * 1024)
    with pytest.raises(ProviderRejected, match="answered 422"):
        bounded(client, 16)
    assert sent[0] <= 65
