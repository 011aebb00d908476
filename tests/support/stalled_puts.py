"""PUTs that declare a large body, send part of it and stop: the stalled-upload
test (``tests/e2e/test_stalled_puts.py``) and its benchmark
(``benchmarks/stalled_puts.py``) both send them."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager, suppress
from urllib.parse import urlsplit

import httpx
import sqlalchemy as sa
from sqlalchemy.engine import make_url

#: What each stalled PUT declares and what it sends before it stops.
DECLARED = 8 * 1024 * 1024
SENT = 4 * 1024 * 1024 + 1


def create_put_url(base_url: str, slug: str, token: str, sha: str) -> str:
    reply = httpx.post(
        f"{base_url}/upload/github/{slug.replace('/', '::::')}/upload-coverage",
        json={"commitid": sha, "branch": "main", "code": "default"},
        headers={"Authorization": f"token {token}"},
        timeout=60,
    )
    reply.raise_for_status()
    return str(reply.json()["raw_upload_location"])


def stalled_put(url: str, answered_within_s: float) -> tuple[int, float]:
    """PUT declaring ``DECLARED`` bytes, send ``SENT``, stop; the status the
    server answers (0: none within ``answered_within_s``) and after how long."""
    parts = urlsplit(url)
    started = time.monotonic()
    with socket.create_connection((parts.hostname, parts.port or 80), timeout=60) as sock:
        head = (
            f"PUT {parts.path}?{parts.query} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
            f"Content-Type: text/plain\r\nContent-Length: {DECLARED}\r\n\r\n"
        )
        # refused before the body was read: its answer is in the socket
        with suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(head.encode() + b"x" * SENT)
        sock.settimeout(answered_within_s)
        try:
            answer = sock.recv(4096)
        except (TimeoutError, ConnectionResetError):
            return 0, time.monotonic() - started
    status = int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/") else 0
    return status, time.monotonic() - started


def idle_in_transaction(database_url: str, database: str) -> int:
    engine = sa.create_engine(make_url(database_url).set(database="postgres"))
    with engine.connect() as conn:
        count = conn.scalar(
            sa.text(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE datname = :db AND state LIKE 'idle in transaction%'"
            ),
            {"db": database},
        )
    engine.dispose()
    return int(count or 0)


@contextmanager
def stall_many(
    urls: list[str], answered_within_s: float
) -> Iterator[list[Future[tuple[int, float]]]]:
    """The stalled PUTs, each in a thread; yields once all have sent their bytes."""
    with ThreadPoolExecutor(max_workers=len(urls)) as pool:
        futures = [pool.submit(stalled_put, url, answered_within_s) for url in urls]
        yield futures
