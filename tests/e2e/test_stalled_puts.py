"""Stalled PUTs against a real ``covworker serve``: they hold no database
connection, a bounded number are received at once, and each is cut off
when its body stops arriving; meanwhile ``/healthz`` and a real uploader's
upload are served."""

from __future__ import annotations

import contextlib
import socket
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from app.api.nodelay import HEADER_TIMEOUT_S
from app.db.models import Upload, UploadChunk, UploadState
from tests.support.private_services import wait_until
from tests.support.processes import add_repo, covworker_serve, migrated_database
from tests.support.stalled_puts import create_put_url, idle_in_transaction, stall_many
from tests.support.uploaders import CLI_JOBS, codecovcli, make_checkout, uploader_env

pytestmark = [pytest.mark.e2e, pytest.mark.integration, pytest.mark.timeout(600)]

STALLED, REPOS, AT_ONCE, IDLE_S = 50, 10, 16, 8


def concurrent_puts(url: str, size: int) -> list[int]:
    """Two PUTs of one URL at once (a large body each); their statuses."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        puts = [pool.submit(httpx.put, url, content=b"y" * size, timeout=120) for _ in range(2)]
        return [put.result().status_code for put in puts]


def closed_after(base_url: str, send: bytes) -> float:
    """Connect, send ``send`` (nothing, or part of a request's head) and
    wait; seconds until the server closes the connection."""
    parts = urlsplit(base_url)
    started = time.monotonic()
    with socket.create_connection((parts.hostname, parts.port or 80), timeout=60) as sock:
        sock.sendall(send)
        assert sock.recv(4096) == b""  # closed, with no answer
    return time.monotonic() - started


def test_fifty_stalled_puts_leave_healthz_and_a_real_upload_served_and_hold_no_connection(
    tmp_path: Path, namespace: str
) -> None:
    checkout, sha = make_checkout(tmp_path)
    with migrated_database(
        namespace,
        COVWORKER_PAYLOAD_IDLE_TIMEOUT_S=str(IDLE_S),
        COVWORKER_LARGE_BODIES_AT_ONCE=str(AT_ONCE),
    ) as (db_url, env):
        tokens = {}
        for slug in [f"stall/repo{i}" for i in range(REPOS)] + ["acme/calc"]:
            tokens[slug] = add_repo(env, slug)
        database = make_url(db_url).database or ""
        with covworker_serve(env, tmp_path / "api.log", workers=1) as served:
            slugs = [f"stall/repo{i % REPOS}" for i in range(STALLED)]
            urls = [
                create_put_url(served.url, slug, tokens[slug], f"{i + 1:040x}")
                for i, slug in enumerate(slugs)
            ]
            started = time.monotonic()
            idle = ThreadPoolExecutor(max_workers=2)
            silent = idle.submit(closed_after, served.url, b"")
            half_head = idle.submit(closed_after, served.url, b"PUT /upload/payload/1?exp")
            with stall_many(urls, answered_within_s=IDLE_S + 60) as stalled:
                # Those refused for lack of a turn are answered at once.
                wait_until(
                    "the PUTs without a turn to be refused",
                    lambda: sum(f.done() for f in stalled) == STALLED - AT_ONCE,
                    timeout_s=IDLE_S,
                )
                with httpx.Client(timeout=10) as client:
                    health = client.get(f"{served.url}/healthz")
                    assert health.status_code == 200 and health.json()["status"] == "ok"
                    repos = client.get(f"{served.url}/api/v1/repos")
                    assert repos.status_code == 200, repos.text
                name, flags, files, _ = CLI_JOBS[0]
                done = codecovcli(
                    uploader_env(env), checkout, served.url, "upload-process",
                    "-r", "acme/calc", "-C", sha, "-B", "main", "-t", tokens["acme/calc"],
                    "-n", name, *(a for f in flags for a in ("-F", f)),
                    *(a for f in files for a in ("-f", f"reports/{f}")),
                )  # fmt: skip
                assert done.returncode == 0, done.stdout + done.stderr
                assert idle_in_transaction(db_url, database) == 0
                answers = [f.result() for f in stalled]
            statuses = Counter(status for status, _ in answers)
            assert statuses[408] == AT_ONCE, statuses
            assert statuses[429] + statuses[503] == STALLED - AT_ONCE, statuses
            # each stalled body was cut off by its idle timeout, not left open
            assert all(s != 408 or IDLE_S - 1 <= t <= IDLE_S + 30 for s, t in answers), answers
            assert time.monotonic() - started < IDLE_S + 90
            # a connection that sends nothing, or half a request line, is closed
            for connection in (silent, half_head):
                assert HEADER_TIMEOUT_S - 1 <= connection.result() <= HEADER_TIMEOUT_S + 30
            idle.shutdown()
            # once cut off, their turns are free: a large body is received again
            url = create_put_url(served.url, "stall/repo0", tokens["stall/repo0"], "e" * 40)
            assert sorted(concurrent_puts(url, 4 * 1024 * 1024 + 10)) == [200, 403]
        engine = sa.create_engine(db_url)
        with engine.connect() as conn:
            states = Counter(conn.scalars(sa.select(Upload.state)))
            chunk_uploads = conn.scalar(
                sa.select(sa.func.count(sa.distinct(UploadChunk.upload_id)))
            )
        engine.dispose()
        # the stalled uploads kept nothing; the real upload and the large body are stored
        assert states == {UploadState.AWAITING: STALLED, UploadState.UPLOADED: 2}, states
        assert chunk_uploads == 1


def test_a_body_that_crawls_past_the_read_timeout_gets_408_and_keeps_nothing(
    tmp_path: Path, namespace: str
) -> None:
    with migrated_database(
        namespace, COVWORKER_PAYLOAD_IDLE_TIMEOUT_S="2", COVWORKER_PAYLOAD_READ_TIMEOUT_S="3"
    ) as (db_url, env):
        token = add_repo(env, "acme/calc")
        with covworker_serve(env, tmp_path / "api.log", workers=1) as served:
            parts = urlsplit(create_put_url(served.url, "acme/calc", token, "b" * 40))
            started = time.monotonic()
            with socket.create_connection((parts.hostname, parts.port or 80)) as sock:
                sock.sendall(
                    f"PUT {parts.path}?{parts.query} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
                    f"Content-Length: {8 * 1024 * 1024}\r\n\r\n".encode()
                )
                sock.settimeout(0.5)  # a byte every half second: never idle for 2 s
                answer = b""
                while not answer:
                    sock.sendall(b"x" * 1_000)  # small: the server has read it all when it closes
                    try:
                        answer = sock.recv(4096)
                    except TimeoutError:
                        assert time.monotonic() - started < 30, "no answer"
                # The head and the body may arrive in separate segments:
                # read until the server closes the connection.
                sock.settimeout(10)
                with contextlib.suppress(ConnectionResetError):
                    while chunk := sock.recv(4096):
                        answer += chunk
            assert answer.startswith(b"HTTP/1.1 408 "), answer
            assert b"the payload took longer than 3 s to arrive" in answer
            assert 3 <= time.monotonic() - started < 30
        engine = sa.create_engine(db_url)
        with engine.connect() as conn:
            assert conn.scalar(sa.select(Upload.state)) == UploadState.AWAITING
            assert conn.scalar(sa.select(sa.func.count()).select_from(UploadChunk)) == 0
        engine.dispose()
