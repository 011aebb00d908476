"""One HTTP seam for the providers: errors typed, rate limits honoured.

Every call goes through :meth:`ProviderHttp.request`, which never loops:
a transient failure is raised as :class:`ProviderUnavailable` or
:class:`RateLimited` (with how long to wait), and the outbox that called
schedules the next attempt. That keeps retries outside Dramatiq's retry
budget and visible on the delivery row.

Rate limits, as GitHub and GitLab document them:

- ``Retry-After`` (seconds or an HTTP date) on a 429 or 403 is obeyed;
- ``X-RateLimit-Remaining: 0`` (GitHub) or ``RateLimit-Remaining: 0``
  (GitLab) with a ``...-Reset`` epoch: wait until the reset. Seen on a
  successful answer too, it blocks this process's later calls with the
  same credentials until the reset instead of spending them on 403s;
- GitHub's secondary limits are a 403 or 429 whose message says
  "secondary rate limit", often without headers: wait a minute, as
  GitHub's documentation asks.
"""

from __future__ import annotations

import email.utils
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import httpx

from app.providers.base import (
    AccessDenied,
    CallCounter,
    ContentTooLarge,
    ProviderRejected,
    ProviderResponseInvalid,
    ProviderUnavailable,
    RateLimited,
    UnknownCommit,
)

Item = TypeVar("Item")

#: Wait after a secondary rate limit that names no time (GitHub: "at least one minute").
SECONDARY_LIMIT_WAIT_S = 60.0
#: Longest wait any header can ask for; past it, something is off and we retry sooner.
MAX_WAIT_S = 3600.0
USER_AGENT = "covworker"
#: Most bytes of an error answer read (its message is shown cut to 500 characters).
ERROR_BODY_BYTES = 64 * 1024


def retry_after_s(headers: Mapping[str, str], now: float) -> float | None:
    """Seconds the provider asks us to wait, from its headers; None if it does not say."""
    value = headers.get("retry-after")
    if value:
        value = value.strip()
        if value.isdigit():
            return min(float(value), MAX_WAIT_S)
        try:
            when = email.utils.parsedate_to_datetime(value).timestamp()
        except (TypeError, ValueError):
            when = None
        if when is not None:
            return min(max(when - now, 0.0), MAX_WAIT_S)
    for prefix in ("x-ratelimit-", "ratelimit-"):
        remaining, reset = headers.get(prefix + "remaining"), headers.get(prefix + "reset")
        if remaining is not None and remaining.strip() == "0" and reset and reset.isdigit():
            return min(max(float(reset) - now, 1.0), MAX_WAIT_S)
    return None


class ProviderHttp:
    """An ``httpx.Client`` for one provider's API root, raising typed errors."""

    def __init__(
        self,
        base_url: str,
        *,
        timeout_s: float,
        counter: CallCounter | None = None,
        transport: httpx.BaseTransport | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.client = httpx.Client(
            timeout=timeout_s, headers={"User-Agent": USER_AGENT}, transport=transport
        )
        self.counter = counter or CallCounter()
        self.clock = clock
        self._blocked_until: dict[str, float] = {}  # credential key -> epoch
        self._lock = threading.Lock()

    def close(self) -> None:
        self.client.close()

    def request(
        self,
        method: str,
        path: str,
        *,
        kind: str,
        headers: Mapping[str, str],
        credential: str,
        repo: str,
        missing_ok: bool = False,
        sha: str | None = None,
        commit_unknown: Callable[[int, str], bool] | None = None,
        max_bytes: int | None = None,
        **kwargs: Any,
    ) -> httpx.Response | None:
        """One call; None for a 404 when ``missing_ok`` (a comment or file that is gone).

        ``credential`` keys the rate-limit block (a token or an installation),
        ``kind`` counts the call (``pull``, ``compare``, ``status``, ...).
        ``commit_unknown(status, message)`` tells an answer that the provider
        has no commit ``sha`` (raised as :class:`UnknownCommit`) from one that
        the file or pull request is missing.
        ``max_bytes``: a successful answer whose body (unpacked) goes past it
        is :class:`ContentTooLarge`, read no further than that; an error
        answer is read up to ``ERROR_BODY_BYTES``.
        """
        now = self.clock()
        with self._lock:
            blocked = self._blocked_until.get(credential, 0.0)
        if blocked > now:
            raise RateLimited(
                f"rate limit of {self.base_url} exhausted until its reset", blocked - now
            )
        url = path if path.startswith(("http://", "https://")) else self.base_url + path
        self.counter.add(kind)
        try:
            if max_bytes is None:
                response = self.client.request(method, url, headers=dict(headers), **kwargs)
            else:
                request = self.client.build_request(method, url, headers=dict(headers), **kwargs)
                response = _bounded(self.client.send(request, stream=True), max_bytes)
        except httpx.TimeoutException as exc:
            raise ProviderUnavailable(f"{method} {url} timed out: {exc}") from exc
        except httpx.TransportError as exc:
            raise ProviderUnavailable(f"{method} {url} failed: {exc}") from exc
        self._remember_exhaustion(credential, response.headers)
        status = response.status_code
        if status < 300:
            return response
        message = _message(response)
        if sha is not None and commit_unknown is not None and commit_unknown(status, message):
            raise UnknownCommit(f"{status} from {method} {url}: {message}", sha)
        if status == 404 and missing_ok:
            return None
        if status in (403, 429):
            wait = retry_after_s(response.headers, self.clock())
            if wait is None and (status == 429 or "rate limit" in message.lower()):
                wait = SECONDARY_LIMIT_WAIT_S
            if wait is not None:
                raise RateLimited(f"{method} {url}: rate limited ({status} {message})", wait)
        if status in (401, 403, 404):
            raise AccessDenied(
                f"{status} from {method} {url} for {repo}: {message or response.reason_phrase}",
                status,
            )
        if status >= 500 or status in (408, 409, 425):
            raise ProviderUnavailable(f"{method} {url} answered {status}: {message}")
        raise ProviderRejected(f"{method} {url} answered {status}: {message}")

    def _remember_exhaustion(self, credential: str, headers: httpx.Headers) -> None:
        for prefix in ("x-ratelimit-", "ratelimit-"):
            remaining, reset = headers.get(prefix + "remaining"), headers.get(prefix + "reset")
            if remaining is not None and remaining.strip() == "0" and reset and reset.isdigit():
                with self._lock:
                    self._blocked_until[credential] = float(reset)
                return


def _bounded(response: httpx.Response, max_bytes: int) -> httpx.Response:
    """The streamed ``response`` read whole if it is at most ``max_bytes``
    (an error answer: its first ``ERROR_BODY_BYTES``), as a plain response;
    else :class:`ContentTooLarge`, without reading past the bound."""
    limit = max_bytes if response.status_code < 300 else ERROR_BODY_BYTES
    try:
        declared = response.headers.get("content-length", "")
        if response.status_code < 300 and declared.isdigit() and int(declared) > limit:
            raise _too_large(response, limit)
        body = bytearray()
        for chunk in response.iter_bytes():  # unpacked: a gzip answer counts as it unpacks
            body += chunk
            if len(body) > limit:
                if response.status_code < 300:
                    raise _too_large(response, limit)
                del body[limit:]
                break
    finally:
        response.close()
    kept = [
        (k, v)
        for k, v in response.headers.multi_items()
        if k.lower() not in ("content-encoding", "content-length", "transfer-encoding")
    ]
    return httpx.Response(
        response.status_code, headers=kept, content=bytes(body), request=response.request
    )


def _too_large(response: httpx.Response, limit: int) -> ContentTooLarge:
    url = response.request.url.copy_with(query=None)
    return ContentTooLarge(f"{url} answered more than {limit} bytes", limit)


def _message(response: httpx.Response) -> str:
    try:
        payload = response.json()
    except ValueError:
        return response.text[:200]
    if isinstance(payload, dict):
        return str(payload.get("message") or payload.get("error") or "")[:500]
    return ""


def json_object(response: httpx.Response) -> dict[str, Any]:
    """The answer's JSON object; anything else is the provider answering off its API."""
    payload = _payload(response)
    if not isinstance(payload, dict):
        raise ProviderResponseInvalid(f"{response.request.url} answered a non-object")
    return payload


def json_list(response: httpx.Response) -> list[dict[str, Any]]:
    """The answer's JSON list of objects (entries that are not objects are passed over)."""
    payload = _payload(response)
    if not isinstance(payload, list):
        raise ProviderResponseInvalid(f"{response.request.url} answered a non-list")
    return [p for p in payload if isinstance(p, dict)]


def _payload(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError as exc:
        raise ProviderResponseInvalid(f"{response.request.url} answered non-JSON") from exc


def paged(
    fetch: Callable[[dict[str, int]], list[Item]], *, per_page: int, max_items: int
) -> list[Item]:
    """Every item of a listing read a page at a time, with the ``page`` and
    ``per_page`` parameters GitHub and GitLab both take: ``fetch`` gets them
    and answers one page. A page shorter than ``per_page`` is the last; at
    most ``max_items`` are read (a provider's own cap on the listing)."""
    items: list[Item] = []
    for page in range(1, -(-max_items // per_page) + 1):
        batch = fetch({"per_page": per_page, "page": page})
        items.extend(batch)
        if len(batch) < per_page:
            break
    return items[:max_items]
