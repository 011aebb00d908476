"""``PUT /upload/payload/{id}`` over HTTP (TestClient on the embedded pipeline):
the signed URL, the single-use fence, the size limit, the turns of large
bodies and the timeouts of a client that stalls; and a PUT's payload into
the object store: the object stays exactly when its upload was admitted
naming it, whatever failed after the fence.

A real server with clients that stall on a socket: tests/e2e/test_stalled_puts.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from types import SimpleNamespace
from typing import cast
from urllib.parse import urlsplit

import anyio
import pytest
import redis
import sqlalchemy as sa
from fastapi import FastAPI
from fastapi.testclient import TestClient
from starlette.types import Message, Scope

from app.api import create_app, payload_put
from app.api.context import ApiContext
from app.api.payload_limits import RETRY_AFTER_S
from app.api.payload_put import Received, _put_object_and_admit
from app.db.models import Commit, Repository, Upload, UploadChunk, UploadState
from app.embedded import EmbeddedRuntime
from app.ingest.store import CommitMeta, UploadMeta, add_awaiting_upload
from app.runtime.services import Services
from tests.app.api.conftest import (
    BASE,
    COVERAGE_BODY,
    MAX_BYTES,
    add_repo,
    api_runtime,
    auth,
    counts,
    create_upload,
    report,
    upload_payload,
    v1_payload,
)
from tests.support.memory_store import MemoryStore
from tests.support.redis_commands import redis_refuses


def upload_state(runtime: EmbeddedRuntime) -> UploadState | None:
    """The state of the one upload stored."""
    with runtime.app.services.sessions() as session:
        return session.scalar(sa.select(Upload.state))


def test_a_put_url_is_single_use_expiring_and_signed(
    client: TestClient, runtime: EmbeddedRuntime, token: str
) -> None:
    path = create_upload(client, token)
    body = v1_payload(("coverage.xml", report("run-sum.xml")))
    assert client.put(path, content=body).status_code == 200
    reused = client.put(path, content=body)
    assert (reused.status_code, reused.text) == (403, "this upload URL was used already")

    upload_id = int(urlsplit(path).path.rsplit("/", 1)[1])
    second = client.post(f"{BASE}/upload-coverage", json=COVERAGE_BODY, headers=auth(token))
    second_id = int(urlsplit(second.json()["raw_upload_location"]).path.rsplit("/", 1)[1])
    assert second_id != upload_id
    expires, sig = client.app.state.ctx.signer.sign(second_id, now=0)  # type: ignore[attr-defined]
    expired = client.put(f"/upload/payload/{second_id}?expires={expires}&sig={sig}", content=body)
    assert expired.status_code == 403 and "expired" in expired.text
    forged = client.put(
        f"/upload/payload/{second_id}?expires=9999999999&sig={'0' * 64}", content=body
    )
    assert forged.status_code == 403 and "signature" in forged.text
    runtime.wait_settled()
    assert counts(runtime) == (1, 2)  # the second upload still awaits its payload


def test_a_payload_over_the_limit_is_413_declared_or_streamed(
    client: TestClient, runtime: EmbeddedRuntime, token: str
) -> None:
    path = create_upload(client, token)
    declared = client.put(path, content=b"x" * (MAX_BYTES + 1))
    assert declared.status_code == 413

    def chunks() -> Iterator[bytes]:  # no Content-Length: refused once past the limit
        for _ in range(100):
            yield b"x" * 10_000

    streamed = client.put(path, content=chunks())
    assert streamed.status_code == 413
    with runtime.app.services.sessions() as session:
        assert session.scalar(sa.select(Upload.state)) == UploadState.AWAITING
    # the URL is still good for a payload within the limit
    assert client.put(path, content=v1_payload(("c.xml", report("run-sum.xml")))).status_code == 200


def test_a_payload_larger_than_a_chunk_is_stored_in_chunks_and_merges(
    client: TestClient, runtime: EmbeddedRuntime, token: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(payload_put, "CHUNK_BYTES", 1000)
    payload = v1_payload(
        ("coverage.xml", report("run-sum.xml")), ("lcov.info", report("run-divide.info"))
    )
    assert len(payload) > 1000
    upload_payload(client, token, payload)
    runtime.wait_settled()
    with runtime.app.services.sessions() as session:
        upload = session.scalars(sa.select(Upload)).one()
        chunks = session.scalars(sa.select(UploadChunk.data).order_by(UploadChunk.seq)).all()
        raw = session.scalar(sa.select(Upload.raw))
    assert (upload.state, upload.raw_size) == (UploadState.MERGED, len(payload))
    assert raw == b"" and len(chunks) >= 1 and b"".join(chunks) == payload


def test_a_chunked_payload_refused_mid_stream_keeps_no_chunk(
    client: TestClient, runtime: EmbeddedRuntime, token: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(payload_put, "CHUNK_BYTES", 1000)
    path = create_upload(client, token)

    def chunks() -> Iterator[bytes]:
        for _ in range(100):
            yield b"x" * 10_000

    refused = client.put(path, content=chunks())
    assert refused.status_code == 413
    with runtime.app.services.sessions() as session:
        assert session.scalar(sa.select(sa.func.count()).select_from(UploadChunk)) == 0
        assert session.scalar(sa.select(Upload.state)) == UploadState.AWAITING


def test_an_empty_or_blank_payload_is_400_and_the_url_stays_good(
    client: TestClient, runtime: EmbeddedRuntime, token: str
) -> None:
    path = create_upload(client, token)
    for blank in (b"", b" \n\t "):
        reply = client.put(path, content=blank)
        assert (reply.status_code, reply.text) == (400, "the payload is empty")
    assert upload_state(runtime) == UploadState.AWAITING
    assert client.put(path, content=v1_payload(("c.xml", report("run-sum.xml")))).status_code == 200


def test_refusals_before_the_body_is_read_close_the_connection(
    client: TestClient, token: str
) -> None:
    """The unread rest of the body must not be parsed as the next request."""
    path = create_upload(client, token)
    upload_id = int(urlsplit(path).path.rsplit("/", 1)[1])
    forged = client.put(f"/upload/payload/{upload_id}?expires=9999999999&sig=x", content=b"x")
    too_big = client.put(path, content=b"x" * (MAX_BYTES + 1))
    for reply in (forged, too_big):
        assert reply.headers["connection"] == "close", reply.status_code
    assert (forged.status_code, too_big.status_code) == (403, 413)
    assert (
        too_big.text
        == f"the payload of {MAX_BYTES + 1} bytes is over the limit of {MAX_BYTES} bytes"
    )


def test_a_signed_url_of_an_upload_that_does_not_exist_is_403_small_or_large(
    client: TestClient, runtime: EmbeddedRuntime
) -> None:
    expires, sig = client.app.state.ctx.signer.sign(999)  # type: ignore[attr-defined]

    def chunks() -> Iterator[bytes]:  # no Content-Length: a large body
        yield b"SF:a.py\nDA:1,1\nend_of_record\n"

    for body in (b"SF:a.py\nDA:1,1\nend_of_record\n", chunks()):
        reply = client.put(f"/upload/payload/999?expires={expires}&sig={sig}", content=body)
        assert (reply.status_code, reply.text) == (403, "this upload URL was used already")
    assert counts(runtime) == (0, 0)


def test_a_used_url_refuses_a_large_body_before_reading_it(
    client: TestClient, runtime: EmbeddedRuntime, token: str
) -> None:
    path = create_upload(client, token)
    assert client.put(path, content=v1_payload(("c.xml", report("run-sum.xml")))).status_code == 200

    def chunks() -> Iterator[bytes]:
        yield b"x" * 10_000

    again = client.put(path, content=chunks())
    assert (again.status_code, again.text) == (403, "this upload URL was used already")
    assert again.headers["connection"] == "close"


def test_a_large_body_past_its_repositorys_turns_is_429_and_a_small_one_needs_no_turn(
    client: TestClient, runtime: EmbeddedRuntime, token: str
) -> None:
    path = create_upload(client, token)
    bodies = client.app.state.ctx.large_bodies  # type: ignore[attr-defined]
    with runtime.app.services.sessions() as session:
        repoid = session.scalar(sa.select(Commit.repository_id))

    def chunks() -> Iterator[bytes]:  # no Content-Length: a large body
        yield v1_payload(("c.xml", report("run-sum.xml")))

    with ExitStack() as held:
        for _ in range(bodies.per_repository):
            held.enter_context(bodies.turn(repoid))
        refused = client.put(path, content=chunks())
        assert refused.status_code == 429
        assert refused.headers["retry-after"] == str(RETRY_AFTER_S)
        assert upload_state(runtime) == UploadState.AWAITING
        small = client.put(path, content=v1_payload(("c.xml", report("run-sum.xml"))))
        assert small.status_code == 200
    assert bodies.receiving == 0


IDLE_S, TOTAL_S = 0.5, 1.0


@pytest.fixture
def impatient(tmp_path: Path) -> Iterator[EmbeddedRuntime]:
    """The embedded pipeline with short payload timeouts."""
    with api_runtime(tmp_path, payload_idle_timeout_s=IDLE_S, payload_read_timeout_s=TOTAL_S) as rt:
        yield rt


async def put_slowly(app: FastAPI, path: str, trickle: bool) -> list[Message]:
    """Send ``app`` a PUT of ``path`` whose client sends one byte and stops
    (``trickle`` False), or goes on sending a byte at a time, slower than
    ``TOTAL_S`` in all; the ASGI messages of the answer."""
    sent: list[Message] = []
    url = urlsplit(path)

    calls = 0

    async def receive() -> Message:
        nonlocal calls
        calls += 1
        if calls > 1 and not trickle:
            await anyio.sleep_forever()  # a client that sends nothing more
        if calls > 1:
            await anyio.sleep(TOTAL_S / 20)  # the pace of a slow client
        return {"type": "http.request", "body": b"x", "more_body": True}

    async def send(message: Message) -> None:
        sent.append(message)

    scope: Scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "PUT",
        "scheme": "http",
        "path": url.path,
        "raw_path": url.path.encode(),
        "query_string": url.query.encode(),
        "root_path": "",
        "headers": [(b"host", b"testserver")],
        "client": ("127.0.0.1", 1),
        "server": ("testserver", 80),
    }
    await app(scope, receive, send)
    return sent


@pytest.mark.parametrize(
    ("trickle", "why"),
    [
        (False, f"no byte of the payload arrived for {IDLE_S:g} s"),
        (True, f"the payload took longer than {TOTAL_S:g} s to arrive"),
    ],
    ids=["stalled", "too-slow"],
)
def test_a_client_that_stalls_or_is_too_slow_is_cut_off_with_408(
    impatient: EmbeddedRuntime, trickle: bool, why: str
) -> None:
    app = create_app(covworker=impatient.app)
    with TestClient(app) as client:
        path = create_upload(client, add_repo(impatient, "acme/web"))
        assert client.portal is not None
        sent = client.portal.call(put_slowly, app, path, trickle)
    start, body = sent[0], sent[1]
    assert start["status"] == 408 and (b"connection", b"close") in start["headers"]
    assert body["body"].decode() == why
    assert upload_state(impatient) == UploadState.AWAITING


# -- the object store's PUT: the object and the upload's admission ----------

LCOV = b"SF:a.py\nDA:1,1\nend_of_record\n"
KEY = "v4/raw/1.abcd.txt"


@pytest.fixture
def services(services: Services) -> Services:
    """The unit services (tests/app/conftest.py) storing objects in memory."""
    services.payload_store = MemoryStore()
    return services


def put(services: Services, upload_id: int, send: object) -> tuple[int, int] | None:
    """The PUT's step after its body was read: the object, then its admission."""
    received = Received()
    received.buffer, received.size = bytearray(LCOV), len(LCOV)
    ctx = cast(ApiContext, SimpleNamespace(services=services, send_processor=send))
    return _put_object_and_admit(ctx, upload_id, KEY, received)


def awaiting(services: Services) -> int:
    with services.sessions.begin() as session:
        repo = Repository(name="acme/web")
        session.add(repo)
    return add_awaiting_upload(services, repo, "a" * 40, CommitMeta(), UploadMeta(), "")


def stored(services: Services) -> dict[str, bytes]:
    assert isinstance(services.payload_store, MemoryStore)
    return services.payload_store.objects


def test_an_admitted_upload_keeps_its_object_and_a_used_url_leaves_none(
    services: Services,
) -> None:
    upload_id, sent = awaiting(services), list[int]()
    assert put(services, upload_id, sent.append) is not None
    assert stored(services) == {KEY: LCOV} and sent == [upload_id]

    stored(services).clear()
    assert put(services, upload_id, sent.append) is None  # the URL was used
    assert stored(services) == {} and sent == [upload_id]


@pytest.mark.parametrize("failing", ["the processing set", "the sender"])
def test_a_failure_after_the_fence_keeps_the_object_its_upload_names(
    services: Services, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    upload_id, sent = awaiting(services), list[int]()
    if failing == "the processing set":
        monkeypatch.setattr(services.state, "mark_processing", redis_refuses)
    with pytest.raises(redis.exceptions.ConnectionError):
        put(services, upload_id, sent.append if failing != "the sender" else redis_refuses)

    with services.sessions() as session:
        row = session.execute(
            sa.select(Upload.state, Upload.storage_path).where(Upload.id == upload_id)
        ).one()
    assert tuple(row) == (UploadState.UPLOADED, KEY)  # the sweep sends it on
    assert stored(services) == {KEY: LCOV}


def test_a_failure_before_the_fence_deletes_the_object(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    upload_id = awaiting(services)

    def database_gone(*args: object, **kwargs: object) -> None:
        raise sa.exc.OperationalError("UPDATE uploads", {}, Exception("server closed"))

    monkeypatch.setattr("app.ingest.admit.store_payload", database_gone)
    with pytest.raises(sa.exc.OperationalError):
        put(services, upload_id, print)

    assert stored(services) == {}
