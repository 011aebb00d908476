"""URLs the service hands to uploaders: the PUT location and the result page."""

from __future__ import annotations

from datetime import UTC, datetime
from urllib.parse import quote

from fastapi import Request

from app.api.context import ApiContext
from app.api.errors import ApiError
from app.db.models import Repository
from app.ingest.arrival import FIRST_LOOK_MS, presigned_key


def base_url(request: Request, ctx: ApiContext) -> str:
    """``COVWORKER_PUBLIC_URL``, else the URL the client used (path prefix
    kept), if its host is one of ``COVWORKER_ALLOWED_HOSTS``: a Host header
    is the client's to choose, and a PUT URL must not send the payload elsewhere."""
    settings = ctx.settings
    if settings.public_url:
        return settings.public_url.rstrip("/")
    allowed = settings.allowed_host_names
    host = (request.headers.get("host") or "").lower()
    bare = host.rsplit(":", 1)[0] if not host.endswith("]") else host
    if "*" not in allowed and host not in allowed and bare.strip("[]") not in allowed:
        raise ApiError(
            400,
            f"the Host {host[:200]!r} is not in COVWORKER_ALLOWED_HOSTS: set "
            "COVWORKER_PUBLIC_URL to the URL uploaders reach this service at (or add the host)",
            plain=request.url.path.endswith(("/upload/v4", "/upload/v2")),
        )
    return str(request.base_url).rstrip("/")


def put_url(
    request: Request,
    ctx: ApiContext,
    upload_id: int,
    repo: Repository | None = None,
    sha: str = "",
) -> str:
    """Where the uploader PUTs the payload: covworker's own signed URL, or
    with ``COVWORKER_S3_PRESIGN=true`` a presigned PUT straight to the object
    store (then ``payload_arrival`` watches for the object; if its messages are
    lost, the sweep finds the object from the row: ``arrival.admit_arrived``)."""
    expires, signature = ctx.signer.sign(upload_id)
    store = ctx.services.payload_store
    if ctx.settings.s3_presign and store is not None and repo is not None:
        today = datetime.now(UTC).date()
        secret = ctx.settings.object_key_secret
        key = presigned_key(repo.id, repo.name, sha, upload_id, today, secret=secret)
        url = store.presign_put(key, ctx.signer.ttl_s)
        from app.actors import payload_arrival  # declared on the running app

        payload_arrival.send_with_options(args=(upload_id, key, expires), delay=FIRST_LOOK_MS)
        return url
    return f"{base_url(request, ctx)}/upload/payload/{upload_id}?expires={expires}&sig={signature}"


def result_url(request: Request, ctx: ApiContext, repo: str, sha: str) -> str:
    return f"{base_url(request, ctx)}/{quote(repo)}/commit/{sha}"
