"""Hostile requests against a real ``covworker serve`` (real Redis and PostgreSQL).

What a stranger's request may cost the server: a large unauthenticated
body is refused early (413 by its declared size, 401 before it is read),
the server's memory does not follow the body's size, and ``/healthz``
keeps answering meanwhile.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import sqlalchemy as sa

from tests.support.processes import Served, add_repo, covworker_serve, migrated_database

SHA = "c" * 40
MIB = 1024 * 1024
#: What streaming the body may add to the server's resident memory at most.
RSS_GROWTH_LIMIT = 16 * MIB


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for pid {pid}")


#: Upload slots awaiting their PUT per commit, in this file's server.
SLOTS = 5


@dataclass
class Server:
    """A running ``covworker serve``, a private repository's upload token, its database."""

    served: Served
    token: str
    database_url: str

    @property
    def url(self) -> str:
        return self.served.url

    @property
    def pid(self) -> int:
        return self.served.pid


@pytest.fixture
def served(tmp_path: Path, namespace: str) -> Iterator[Server]:
    with migrated_database(namespace, COVWORKER_MAX_AWAITING_UPLOADS=str(SLOTS)) as (db_url, env):
        token = add_repo(env, "acme/secret", "--private")
        with covworker_serve(env, tmp_path / "api.log") as server:
            yield Server(server, token, db_url)


def _connect(url: str) -> socket.socket:
    parts = urlsplit(url)
    return socket.create_connection((parts.hostname, parts.port), timeout=30)


def _status(sock: socket.socket) -> tuple[int, bytes]:
    head = b""
    while b"\r\n\r\n" not in head:
        got = sock.recv(65536)
        if not got:
            break
        head += got
    status = int(head.split(b" ", 2)[1]) if head.startswith(b"HTTP/") else 0
    return status, head


@contextmanager
def healthz_probe(url: str) -> Iterator[list[float]]:
    """``/healthz`` polled in a thread while the block runs; yields the
    latencies (s). A probe that fails or times out fails the test."""
    latencies: list[float] = []
    errors: list[BaseException] = []
    stop = threading.Event()

    def probe() -> None:
        try:
            while not stop.is_set():
                started = time.monotonic()
                with urllib.request.urlopen(f"{url}/healthz", timeout=5) as reply:
                    assert reply.status == 200
                latencies.append(time.monotonic() - started)
        except BaseException as exc:  # reported in the test's thread
            errors.append(exc)

    thread = threading.Thread(target=probe, daemon=True)
    thread.start()
    try:
        yield latencies
    finally:
        stop.set()
        thread.join(timeout=30)
    assert not errors, errors
    assert latencies, "the health check never answered"


def test_a_declared_100_mib_unauthenticated_body_is_413_before_a_byte_is_read(
    served: Server,
) -> None:
    server = served
    for path in ("/upload/github/acme::::secret/upload-coverage", "/-/login", "/-/ops/login"):
        with _connect(server.url) as sock:
            sock.sendall(
                f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                f"Content-Length: {100 * MIB}\r\n\r\n".encode()
            )
            status, _ = _status(sock)  # no body sent at all: the answer comes anyway
            assert status == 413, path


def stream_until_answered(
    url: str, head: bytes, total: int, chunk: bytes
) -> tuple[int, bytes, int]:
    """Send ``head`` then a chunked body of ``total`` bytes of ``chunk``s,
    stopping once the server answers; (status, response head, bytes sent)."""
    sent, status, answer = 0, 0, b""
    with _connect(url) as sock:
        sock.sendall(head + b"Transfer-Encoding: chunked\r\n\r\n")
        sock.settimeout(0.5)
        try:
            while sent < total:
                sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                sent += len(chunk)
                try:
                    status, answer = _status(sock)
                    break
                except TimeoutError:
                    continue
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered and closed: read what it said
        if not status:
            sock.settimeout(30)
            status, answer = _status(sock)
    return status, answer, sent


def test_a_streamed_60_mib_unauthenticated_body_is_refused_unread_and_healthz_keeps_answering(
    served: Server,
) -> None:
    """Chunked, so no size is declared: the token is checked before the body
    is read, the 401 comes while the client is still sending, and the
    server's memory does not grow with what it sent."""
    server = served
    before = rss_bytes(server.pid)
    head = (
        b"POST /upload/github/acme::::secret/upload-coverage HTTP/1.1\r\n"
        b"Host: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Authorization: token not-the-token\r\n"
    )
    with healthz_probe(server.url) as latencies:
        status, _, sent = stream_until_answered(server.url, head, 60 * MIB, b"[" * MIB)
    assert status == 401
    assert sent < 60 * MIB, "the server read the whole body before answering"
    assert rss_bytes(server.pid) - before < RSS_GROWTH_LIMIT
    assert max(latencies) < 2.0, latencies


def test_a_streamed_100_mib_login_token_is_413_and_never_becomes_a_cookie(
    served: Server,
) -> None:
    server = served
    before = rss_bytes(server.pid)
    head = (
        b"POST /-/login HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Type: application/x-www-form-urlencoded\r\n"
    )
    status, answer, sent = stream_until_answered(server.url, head, 100 * MIB, b"t" * MIB)
    assert status == 413 and sent < 100 * MIB
    assert b"covworker_read" not in answer
    assert rss_bytes(server.pid) - before < RSS_GROWTH_LIMIT


def test_upload_slots_awaiting_their_put_are_capped_per_commit_and_expired_ones_make_room(
    served: Server,
) -> None:
    server, token = served, served.token
    url = f"{server.url}/upload/github/acme::::secret/upload-coverage"
    body = json.dumps({"commitid": SHA, "name": "job"}).encode()

    def create() -> int:
        request = urllib.request.Request(
            url,
            data=body,
            method="POST",
            headers={"Authorization": f"token {token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as reply:
                return int(reply.status)
        except urllib.error.HTTPError as exc:
            assert exc.code == 429 and "COVWORKER_MAX_AWAITING_UPLOADS" in exc.read().decode()
            return int(exc.code)

    assert [create() for _ in range(SLOTS + 2)] == [201] * SLOTS + [429, 429]
    engine = sa.create_engine(served.database_url)
    try:
        with engine.begin() as conn:  # two slots as old as two URL lifetimes and a second
            conn.execute(
                sa.text(
                    "UPDATE uploads SET created_at = now() - interval '1201 seconds' "
                    "WHERE id IN (SELECT id FROM uploads ORDER BY id LIMIT 2)"
                )
            )
        assert [create() for _ in range(3)] == [201, 201, 429]
        with engine.connect() as conn:
            states = conn.execute(sa.text("SELECT state FROM uploads")).scalars().all()
        assert states == ["awaiting"] * SLOTS  # the expired two are gone, nothing else
    finally:
        engine.dispose()
