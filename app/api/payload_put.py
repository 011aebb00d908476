"""``PUT /upload/payload/{id}``: the payload of an upload, at its signed URL.

No database connection is held while a client sends. The body is read
first, and only then stored: a body of up to one chunk in memory, a larger
one spooled to a temporary file (bounded by ``COVWORKER_MAX_UPLOAD_BYTES``),
so a client that stalls costs a file descriptor and a few MiB of disk, not
a connection of the pool. Then, in one trip to the thread pool, the payload
goes into the upload row or its chunk rows (the database) or into one
object (the object store, app/storage), and the single-use fence moves the
upload out of ``awaiting``.

A client is cut off with 408 when no byte of its body arrives for
``COVWORKER_PAYLOAD_IDLE_TIMEOUT_S`` or the whole body takes longer than
``COVWORKER_PAYLOAD_READ_TIMEOUT_S``. Large bodies (over a chunk, or of
undeclared length) are received a bounded number at once per server
process: ``COVWORKER_LARGE_BODIES_PER_REPOSITORY`` per repository (then 429)
and ``COVWORKER_LARGE_BODIES_AT_ONCE`` in all (then 503), both with
``Retry-After``, so one repository's stalled uploads cannot starve the
others'. A declared ``Content-Length`` over the limit is refused before
anything is read, an undeclared one as soon as the bytes read pass it.
"""

from __future__ import annotations

import io
import logging
import secrets
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from typing import IO, Annotated

import anyio
from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from app.api.context import ApiContext, context
from app.api.errors import ApiError
from app.api.payload_limits import CLOSE, RETRY_AFTER_S
from app.ingest.admit import InChunks, InObject, InRow, admit
from app.ingest.store import PayloadTarget, awaiting, payload_target
from app.storage import StorageUnavailable, object_key

logger = logging.getLogger(__name__)
router = APIRouter()
Ctx = Annotated[ApiContext, Depends(context)]

#: Bytes of a payload held in memory; a larger one is spooled to a file and
#: written to the database in chunk rows of this size.
CHUNK_BYTES = 4 * 1024 * 1024
#: Bytes gathered before a write to the spool file (one thread-pool trip each).
SPOOL_WRITE_BYTES = 1024 * 1024


def _too_large(size: object, limit: int) -> ApiError:
    return ApiError(
        413,
        f"the payload of {size} bytes is over the limit of {limit} bytes",
        plain=True,
        headers=CLOSE,
    )


async def _body(request: Request, idle_s: float, total_s: float) -> AsyncIterator[bytes]:
    """The request's body chunks; 408 when the client stalls or is too slow."""
    chunks = request.stream().__aiter__()
    deadline = time.monotonic() + total_s
    while True:
        left = deadline - time.monotonic()
        try:
            with anyio.fail_after(min(idle_s, max(left, 0))):
                chunk = await chunks.__anext__()
        except StopAsyncIteration:
            return
        except TimeoutError:
            if left <= idle_s:
                why = f"the payload took longer than {total_s:g} s to arrive"
            else:
                why = f"no byte of the payload arrived for {idle_s:g} s"
            raise ApiError(408, why, plain=True, headers=CLOSE) from None
        yield chunk


class Received:
    """A whole body: in memory (``small``) or in a spool file."""

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.spool: IO[bytes] | None = None
        self.size = 0

    async def add(self, chunk: bytes) -> None:
        self.size += len(chunk)
        self.buffer += chunk
        if self.spool is None and len(self.buffer) <= CHUNK_BYTES:
            return
        if self.spool is None or len(self.buffer) >= SPOOL_WRITE_BYTES:
            await self.flush()

    async def flush(self) -> None:
        if self.spool is None:
            self.spool = await anyio.to_thread.run_sync(tempfile.TemporaryFile)
        if self.buffer:
            await anyio.to_thread.run_sync(self.spool.write, bytes(self.buffer))
            self.buffer.clear()

    def empty(self) -> bool:
        return self.size == 0 or (self.spool is None and self.buffer.isspace())

    def stream(self) -> IO[bytes]:
        """The body from its start (call after ``flush`` for a spooled one)."""
        if self.spool is None:
            return io.BytesIO(self.buffer)
        self.spool.seek(0)
        return self.spool

    def close(self) -> None:
        if self.spool is not None:
            self.spool.close()


async def receive_payload(
    request: Request, ctx: ApiContext, upload_id: int, target: PayloadTarget | None = None
) -> tuple[int, int]:
    """Receive the body, then store it as the payload of the awaiting upload
    ``upload_id``; 413 if too large, 400 if empty, 403 if the upload got its
    payload meanwhile, 408 if the client stalls, 429/503 without a turn,
    503 if the object store is down (nothing is kept then)."""
    settings = ctx.settings
    limit = settings.max_upload_bytes
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise _too_large(declared, limit)
    store = ctx.services.payload_store
    large = not (declared.isdigit() and int(declared) <= CHUNK_BYTES)
    if target is None and (large or store is not None):
        target = await run_in_threadpool(payload_target, ctx.services, upload_id)
        if target is None:
            raise ApiError(404, f"upload {upload_id} does not exist", plain=True)
    received = Received()
    try:
        with ctx.large_bodies.turn(target.repoid) if target and large else _no_turn():
            async for chunk in _body(
                request, settings.payload_idle_timeout_s, settings.payload_read_timeout_s
            ):
                if received.size + len(chunk) > limit:
                    raise _too_large(f"more than {limit}", limit)
                await received.add(chunk)
            if received.empty():
                raise ApiError(400, "the payload is empty", plain=True)
            if received.spool is not None:
                await received.flush()
        if store is not None:
            assert target is not None
            today, attempt = datetime.now(UTC).date(), secrets.token_hex(4)
            key = object_key(
                target.repoid,
                target.repo_name,
                target.sha,
                upload_id,
                today,
                attempt,
                secret=ctx.settings.object_key_secret,
            )
            stored = await run_in_threadpool(_put_object_and_admit, ctx, upload_id, key, received)
        elif received.spool is None:
            # One trip to the thread pool: store (the fence) and enqueue.
            # Stored a few at a time (ApiContext.puts): the other PUTs wait
            # here, with their bodies read, and the POSTs do not wait for them.
            async with ctx.puts:
                payload = InRow(received.buffer)
                stored = await run_in_threadpool(
                    admit, ctx.services, upload_id, payload, ctx.send_processor
                )
        else:
            stored = await run_in_threadpool(_admit_spooled, ctx, upload_id, received)
    finally:
        received.close()
    if stored is None:
        raise ApiError(403, "this upload URL was used already", plain=True)
    return stored


@contextmanager
def _no_turn() -> Iterator[None]:
    yield


def _admit_spooled(ctx: ApiContext, upload_id: int, received: Received) -> tuple[int, int] | None:
    chunks = InChunks(received.stream(), CHUNK_BYTES)
    return admit(ctx.services, upload_id, chunks, ctx.send_processor)


def _put_object_and_admit(
    ctx: ApiContext, upload_id: int, key: str, received: Received
) -> tuple[int, int] | None:
    """The object first (whole or not at all), then its admission naming it;
    an object whose upload was taken meanwhile is deleted again. One whose
    upload passed the fence stays, even if the processor could not be sent:
    the sweep sends it on and the processor reads it."""
    store = ctx.services.payload_store
    assert store is not None
    try:
        store.put(key, received.stream(), received.size)
    except StorageUnavailable as exc:  # its address stays in the log, not in the answer
        logger.warning("Upload %s: payload not stored: %s", upload_id, exc)
        raise ApiError(
            503,
            "the object store is not reachable: the payload was not stored, nothing was "
            "kept; retry later",
            plain=True,
            headers={"Retry-After": str(RETRY_AFTER_S)},
        ) from None
    try:
        stored = admit(ctx.services, upload_id, InObject(key, received.size), ctx.send_processor)
    except BaseException:
        if _unused(ctx, upload_id):
            with suppress(StorageUnavailable):
                store.delete([key])
        raise
    if stored is None:  # the fence refused it: another PUT's object is the upload's
        with suppress(StorageUnavailable):
            store.delete([key])
    return stored


def _unused(ctx: ApiContext, upload_id: int) -> bool:
    """After a failed admission: whether the upload still awaits a payload,
    so the object it was to name can go. One that passed the fence names it
    (the sweep sends it on); if the database cannot say, the fence most
    likely failed with it."""
    try:
        return awaiting(ctx.services, upload_id)
    except Exception:  # the admission's own error is the one raised
        return True


@router.put("/upload/payload/{upload_id}")
async def put_payload(
    request: Request, upload_id: int, ctx: Ctx, expires: int = 0, sig: str = ""
) -> Response:
    why = ctx.signer.check(upload_id, expires, sig)
    if why:
        raise ApiError(403, why, plain=True, headers=CLOSE)
    declared = request.headers.get("content-length", "")
    small = declared.isdigit() and int(declared) <= CHUNK_BYTES
    target = None
    # A large body: a used URL is refused before it is read, and its
    # repository's turn taken. A smaller one meets the same fence when stored.
    if not small or ctx.services.payload_store is not None:
        target = await run_in_threadpool(payload_target, ctx.services, upload_id)
        if target is None or not target.awaiting:
            raise ApiError(403, "this upload URL was used already", plain=True, headers=CLOSE)
    await receive_payload(request, ctx, upload_id, target)
    return Response(status_code=200)  # the legacy uploader needs exactly 200
