"""``PUT /upload/payload/{id}``: the payload of an upload, at its signed URL.

The body is streamed: a declared ``Content-Length`` over the limit is
refused before reading anything, and an undeclared one as soon as the
bytes read pass the limit. The bytes go straight into one buffer, which is
what the database insert sends.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from app.api.context import ApiContext, context
from app.api.errors import ApiError
from app.ingest.store import awaiting, store_payload

router = APIRouter()
Ctx = Annotated[ApiContext, Depends(context)]


async def read_limited(request: Request, limit: int, *, plain: bool = False) -> bytearray:
    """The request body, refused with 413 once it is over ``limit`` bytes."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise ApiError(
            413, f"the payload of {declared} bytes is over the limit of {limit} bytes", plain=plain
        )
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise ApiError(413, f"the payload is over the limit of {limit} bytes", plain=plain)
    return body


@router.put("/upload/payload/{upload_id}")
async def put_payload(
    request: Request, upload_id: int, ctx: Ctx, expires: int = 0, sig: str = ""
) -> Response:
    why = ctx.signer.check(upload_id, expires, sig)
    if why:
        raise ApiError(403, why, plain=True)
    if not await run_in_threadpool(awaiting, ctx.services, upload_id):
        raise ApiError(403, "this upload URL was used already", plain=True)
    body = await read_limited(request, ctx.settings.max_upload_bytes, plain=True)
    if not body or body.isspace():
        raise ApiError(400, "the payload is empty", plain=True)
    stored = await run_in_threadpool(store_payload, ctx.services, upload_id, body)
    del body
    if stored is None:
        raise ApiError(403, "this upload URL was used already", plain=True)
    await run_in_threadpool(ctx.pipeline.upload_processor.send, upload_id)
    return Response(status_code=200)  # the legacy uploader needs exactly 200
