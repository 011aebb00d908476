"""The legacy protocol: ``POST /upload/v4`` (then a PUT) and ``POST /upload/v2``.

Spoken by the ``codecov`` Python uploader and by ``codecovcli --legacy``.
The query string carries everything; the token is in ``token=`` or the
``X-Upload-Token`` header. Replies are text: the legacy uploader splits the
v4 reply into its two URLs, so it has no trailing newline.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, PlainTextResponse
from starlette.concurrency import run_in_threadpool

from app.api.auth import authorise_legacy
from app.api.bodies import MAX_PULLID
from app.api.context import ApiContext, context
from app.api.errors import ApiError
from app.api.links import base_url, put_url, result_url
from app.api.payload_put import receive_payload
from app.api.slots import check_slots_sync
from app.db.models import Repository
from app.errors import InvalidUpload
from app.ingest.accept import validate_flags, validate_full_sha
from app.ingest.store import (
    CommitMeta,
    UploadMeta,
    add_awaiting_upload,
)

router = APIRouter()
Ctx = Annotated[ApiContext, Depends(context)]


def _bad(detail: str) -> ApiError:
    return ApiError(400, detail, plain=True)


def _query(request: Request) -> tuple[str, CommitMeta, UploadMeta]:
    q = request.query_params
    try:
        sha = validate_full_sha(q.get("commit", ""))
        flags = validate_flags(
            [f.strip() for v in q.getlist("flags") for f in v.split(",") if f.strip()]
        )
    except InvalidUpload as exc:
        raise _bad(str(exc)) from None
    pr = q.get("pr", "")
    if pr in ("", "false", "null", "None", "undefined"):
        pullid = None
    elif pr.isdigit() and len(pr) <= 10 and int(pr) <= MAX_PULLID:
        pullid = int(pr)
    else:
        raise _bad(f"pr {pr[:40]!r} is not a pull request number between 0 and {MAX_PULLID}")
    commit = CommitMeta(branch=_field(request, "branch", 255), pullid=pullid)
    upload = UploadMeta(
        flags=flags,
        name=_field(request, "name", 100),
        job_code=_field(request, "job", 255),
        build_code=_field(request, "build", 255),
        build_url=_field(request, "build_url", 2048),
        ci_service=_field(request, "service", 64),
    )
    return sha, commit, upload


def _field(request: Request, name: str, limit: int) -> str | None:
    """A query field to store: at most ``limit`` characters (its column's size)."""
    value = request.query_params.get(name) or None
    if value is not None and len(value) > limit:
        raise _bad(f"{name} is {len(value)} characters long; at most {limit}")
    return value


def _legacy_token(request: Request) -> str:
    return (request.query_params.get("token") or request.headers.get("x-upload-token", "")).strip()


def _create(ctx: ApiContext, request: Request) -> tuple[Repository, str, int]:
    token = _legacy_token(request)
    slug = request.query_params.get("slug") or None
    repo = authorise_legacy(ctx.services, slug, token)
    sha, commit_meta, upload_meta = _query(request)
    base_url(request, ctx)  # a Host the PUT URL may name, before anything is stored
    check_slots_sync(ctx.services, repo, sha)
    upload_id = add_awaiting_upload(ctx.services, repo, sha, commit_meta, upload_meta, "legacy")
    return repo, sha, upload_id


@router.post("/upload/v4")
def upload_v4(request: Request, ctx: Ctx) -> PlainTextResponse:
    repo, sha, upload_id = _create(ctx, request)
    urls = (
        f"{result_url(request, ctx, repo.name, sha)}\n{put_url(request, ctx, upload_id, repo, sha)}"
    )
    return PlainTextResponse(urls, status_code=200)


@router.post("/upload/v2")
async def upload_v2(request: Request, ctx: Ctx) -> JSONResponse:
    repo, sha, upload_id = await run_in_threadpool(_create, ctx, request)
    await receive_payload(request, ctx, upload_id)
    url = result_url(request, ctx, repo.name, sha)
    return JSONResponse(
        {
            "message": "Coverage reports upload successfully",
            "uploaded": True,
            "queued": True,
            "id": str(upload_id),
            "url": url,
        }
    )
