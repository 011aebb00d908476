"""URLs the service hands to uploaders: the PUT location and the result page."""

from __future__ import annotations

from urllib.parse import quote

from fastapi import Request

from app.api.context import ApiContext


def base_url(request: Request, ctx: ApiContext) -> str:
    """``COVWORKER_PUBLIC_URL``, else the URL the client used (path prefix kept)."""
    return (ctx.settings.public_url or str(request.base_url)).rstrip("/")


def put_url(request: Request, ctx: ApiContext, upload_id: int) -> str:
    expires, signature = ctx.signer.sign(upload_id)
    return f"{base_url(request, ctx)}/upload/payload/{upload_id}?expires={expires}&sig={signature}"


def result_url(request: Request, ctx: ApiContext, repo: str, sha: str) -> str:
    return f"{base_url(request, ctx)}/{quote(repo)}/commit/{sha}"
