"""``PUT /upload/payload/{id}``: the payload of an upload, at its signed URL.

The body is streamed: a declared ``Content-Length`` over the limit is
refused before reading anything, and an undeclared one as soon as the
bytes read pass the limit (nothing is kept then). A payload that fits in
one chunk goes into the upload row; a larger one is written chunk by chunk
as it arrives, so the api holds at most a chunk of it at a time.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from app.api.context import ApiContext, context
from app.api.errors import ApiError
from app.ingest.store import PayloadWriter, awaiting, store_payload

router = APIRouter()
Ctx = Annotated[ApiContext, Depends(context)]

#: Bytes of a payload held before they are written out as one chunk row.
CHUNK_BYTES = 4 * 1024 * 1024


def _too_large(size: object, limit: int) -> ApiError:
    return ApiError(
        413, f"the payload of {size} bytes is over the limit of {limit} bytes", plain=True
    )


async def receive_payload(request: Request, ctx: ApiContext, upload_id: int) -> tuple[int, int]:
    """Stream the body into the awaiting upload ``upload_id``; 413 if too
    large, 400 if empty, 403 if the upload got its payload meanwhile."""
    limit = ctx.settings.max_upload_bytes
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _too_large(declared, limit)
    buffer, size = bytearray(), 0
    writer: PayloadWriter | None = None
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise _too_large(f"more than {limit}", limit)
            buffer += chunk
            if len(buffer) >= CHUNK_BYTES:
                if writer is None:
                    writer = await run_in_threadpool(PayloadWriter, ctx.services, upload_id)
                await run_in_threadpool(writer.write, bytes(buffer))
                buffer.clear()
        if writer is None:
            if not buffer or buffer.isspace():
                raise ApiError(400, "the payload is empty", plain=True)
            # One trip to the thread pool: store (the fence) and enqueue.
            # Stored a few at a time (ApiContext.puts): the other PUTs wait
            # here, with their bodies read, and the POSTs do not wait for them.
            async with ctx.puts:
                stored = await run_in_threadpool(_store_and_send, ctx, upload_id, buffer)
            if stored is None:
                raise ApiError(403, "this upload URL was used already", plain=True)
            return stored
        if buffer:
            await run_in_threadpool(writer.write, bytes(buffer))
        stored, writer = await run_in_threadpool(writer.finish), None
    finally:
        if writer is not None:  # refused or failed mid-stream: nothing is kept
            await run_in_threadpool(writer.abort)
    if stored is None:
        raise ApiError(403, "this upload URL was used already", plain=True)
    await run_in_threadpool(ctx.send_processor, upload_id)
    return stored


def _store_and_send(ctx: ApiContext, upload_id: int, body: bytearray) -> tuple[int, int] | None:
    stored = store_payload(ctx.services, upload_id, body)
    if stored is not None:
        ctx.send_processor(upload_id)
    return stored


@router.put("/upload/payload/{upload_id}")
async def put_payload(
    request: Request, upload_id: int, ctx: Ctx, expires: int = 0, sig: str = ""
) -> Response:
    why = ctx.signer.check(upload_id, expires, sig)
    if why:
        raise ApiError(403, why, plain=True)
    declared = request.headers.get("content-length", "")
    small = declared.isdigit() and int(declared) <= CHUNK_BYTES
    # A body that may go to chunk rows: a used URL is refused before it is
    # read. A smaller one meets the same fence when it is stored.
    if not small and not await run_in_threadpool(awaiting, ctx.services, upload_id):
        raise ApiError(403, "this upload URL was used already", plain=True)
    await receive_payload(request, ctx, upload_id)
    return Response(status_code=200)  # the legacy uploader needs exactly 200
