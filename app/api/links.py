"""URLs the service hands to uploaders: the PUT location and the result page."""

from __future__ import annotations

from datetime import UTC, datetime
from urllib.parse import quote

from fastapi import Request

from app.api.context import ApiContext
from app.db.models import Repository
from app.storage import object_key
from app.storage.arrival import FIRST_LOOK_MS


def base_url(request: Request, ctx: ApiContext) -> str:
    """``COVWORKER_PUBLIC_URL``, else the URL the client used (path prefix kept)."""
    return (ctx.settings.public_url or str(request.base_url)).rstrip("/")


def put_url(
    request: Request,
    ctx: ApiContext,
    upload_id: int,
    repo: Repository | None = None,
    sha: str = "",
) -> str:
    """Where the uploader PUTs the payload: covworker's own signed URL, or
    with ``COVWORKER_S3_PRESIGN=true`` a presigned PUT straight to the object
    store (then ``payload_arrival`` watches for the object)."""
    expires, signature = ctx.signer.sign(upload_id)
    store = ctx.services.payload_store
    if ctx.settings.s3_presign and store is not None and repo is not None:
        key = object_key(repo.id, repo.name, sha, upload_id, datetime.now(UTC).date())
        url = store.presign_put(key, ctx.signer.ttl_s)
        ctx.pipeline.payload_arrival.send_with_options(
            args=(upload_id, key, expires), delay=FIRST_LOOK_MS
        )
        return url
    return f"{base_url(request, ctx)}/upload/payload/{upload_id}?expires={expires}&sig={signature}"


def result_url(request: Request, ctx: ApiContext, repo: str, sha: str) -> str:
    return f"{base_url(request, ctx)}/{quote(repo)}/commit/{sha}"
