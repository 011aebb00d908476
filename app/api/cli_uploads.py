"""The codecov-cli endpoints: create-commit, create-report, create-upload,
the single-call upload-coverage, upload-complete and empty-upload.

Each authorises first (404 unknown service, 401 a token that does not
open the repository, or no such repository: a stranger cannot tell the two
apart), then reads its JSON body: a refused request's body is never read or
parsed, and no body is larger than ``COVWORKER_MAX_REQUEST_BODY_BYTES``
(``app.api.limits``). The blocking database calls run in the thread pool.
create-upload and upload-coverage, the calls of every CI job, stay on the
event loop: their one statement goes through an asyncio engine on
PostgreSQL, so they do not queue in the thread pool behind payload work.
"""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Depends, Header, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from starlette.concurrency import run_in_threadpool

from app.api.auth import authorise, authorise_cached, decode_slug, token_from_header
from app.api.bodies import UploadBody, full_sha, pull_number
from app.api.context import ApiContext, context
from app.api.errors import ApiError
from app.api.links import base_url, put_url, result_url
from app.api.slots import check_slots
from app.db.models import Commit, Repository
from app.errors import InvalidUpload
from app.ingest.accept import find_commit, validate_full_sha
from app.ingest.store import (
    CommitMeta,
    add_awaiting_upload_async,
    upload_counts,
    upsert_commit,
)

#: JSON bodies up to this size are parsed on the event loop; larger (up to
#: ``COVWORKER_MAX_REQUEST_BODY_BYTES``) in the thread pool.
PARSE_ON_LOOP_BYTES = 16 * 1024

router = APIRouter(prefix="/upload/{service}/{slug}")
Ctx = Annotated[ApiContext, Depends(context)]
Auth = Annotated[str | None, Header()]


class CommitBody(BaseModel):
    model_config = ConfigDict(extra="ignore")
    commitid: str
    branch: str | None = Field(None, max_length=1024)  # stored cut to 255 (_commit_fields)
    parent_commit_id: str | None = None
    pullid: int | None = None

    @field_validator("commitid")
    @classmethod
    def _commitid(cls, value: str) -> str:
        return full_sha(value)

    @field_validator("parent_commit_id")
    @classmethod
    def _parent(cls, value: str | None) -> str | None:
        return full_sha(value) if value else None

    @field_validator("pullid", mode="before")
    @classmethod
    def _pull(cls, value: Any) -> int | None:
        return pull_number(value)

    def commit_meta(self) -> CommitMeta:
        return CommitMeta(self.branch, self.parent_commit_id, self.pullid)


class ReportBody(BaseModel):
    model_config = ConfigDict(extra="ignore")
    code: str | None = "default"


class UploadCoverageBody(UploadBody, CommitBody):
    code: str | None = "default"


Body = TypeVar("Body", bound=BaseModel)


async def read_body(request: Request, model: type[Body]) -> Body:
    """The request's JSON body as ``model``, read once the caller authorised
    the request: its size is bounded while it streams (``app.api.limits``),
    and a large one is parsed off the event loop. Refusals are FastAPI's:
    400 for JSON that does not parse, 422 naming each bad field."""
    raw = await request.body()
    if not raw.strip():
        raw = b"{}"
    try:
        if len(raw) <= PARSE_ON_LOOP_BYTES:
            return model.model_validate_json(raw)
        return await run_in_threadpool(model.model_validate_json, raw)
    except ValidationError as exc:
        errors = [{**e, "loc": ("body", *e.get("loc", ()))} for e in exc.errors()]
        raise RequestValidationError(errors) from None


def _check_code(code: str | None) -> None:
    if code not in (None, "", "default"):
        raise ApiError(400, f"report code {code!r}: only the default report is supported")


async def authorised_repo(
    service: str, slug: str, ctx: Ctx, authorization: Auth = None
) -> Repository:
    """FastAPI dependency: the repository the URL names, if the request's
    token opens it; resolved before the handler reads its body. A cached
    repository is checked on the event loop (a hash and a constant-time
    compare); a miss reads it in the thread pool."""
    name, token = decode_slug(slug), token_from_header(authorization)
    repo = authorise_cached(service, name, token, ctx.repositories)
    if repo is None:
        return await run_in_threadpool(
            authorise, ctx.services, service, name, token, ctx.repositories
        )
    return repo


Repo = Annotated[Repository, Depends(authorised_repo)]


def _commit_json(commit: Commit) -> dict[str, Any]:
    return {
        "commitid": commit.sha,
        "branch": commit.branch,
        "parent_commit_id": commit.parent_commit_id,
        "pullid": commit.pullid,
        "timestamp": commit.created_at.isoformat() if commit.created_at else None,
    }


@router.post("/commits", status_code=201)
async def create_commit(request: Request, repo: Repo, ctx: Ctx) -> dict[str, Any]:
    body = await read_body(request, CommitBody)

    def store() -> dict[str, Any]:
        with ctx.services.sessions.begin() as session:
            commit = upsert_commit(session, repo, body.commitid, body.commit_meta())
            return _commit_json(commit)

    return await run_in_threadpool(store)


@router.post("/commits/{sha}/reports", status_code=201)
async def create_report(request: Request, sha: str, repo: Repo, ctx: Ctx) -> dict[str, Any]:
    body = await read_body(request, ReportBody)
    _check_code(body.code)
    sha = _path_sha(sha)

    def store() -> dict[str, Any]:
        with ctx.services.sessions.begin() as session:
            commit = upsert_commit(session, repo, sha, CommitMeta())
            return {"external_id": f"{commit.id}", "commit_sha": commit.sha, "code": "default"}

    return await run_in_threadpool(store)


def _path_sha(sha: str) -> str:
    try:
        return validate_full_sha(sha)
    except InvalidUpload as exc:
        raise ApiError(404, str(exc)) from None


def _created_upload(
    request: Request, ctx: ApiContext, repo: Repository, sha: str, upload_id: int, body: UploadBody
) -> JSONResponse:
    return JSONResponse(
        {
            "external_id": str(upload_id),
            "raw_upload_location": put_url(request, ctx, upload_id, repo, sha),
            "url": result_url(request, ctx, repo.name, sha),
            "state": "started",
            "provider": body.ci_service,
            "upload_type": "uploaded",
            "ci_url": body.ci_url,
            "flags": body.flags or [],
            "env": body.env,
            "name": body.name,
            "job_code": body.job_code,
        },
        status_code=201,
    )


def _check_upload(request: Request, ctx: ApiContext, code: str | None, body: UploadBody) -> None:
    """What an upload is refused for before anything of it is stored."""
    base_url(request, ctx)  # a Host the PUT URL may name
    _check_code(code)
    body.check_declared_size(ctx.settings.max_upload_bytes)


async def _start_upload(
    request: Request,
    ctx: ApiContext,
    repo: Repository,
    sha: str,
    body: UploadBody,
    commit_meta: CommitMeta,
) -> JSONResponse:
    """Store an upload awaiting its bytes (if the commit has a slot left) and
    answer where to PUT them: both upload endpoints, once their body is checked."""
    meta = body.upload_meta()
    await check_slots(ctx.services, ctx.async_engine, repo, sha)
    upload_id = await add_awaiting_upload_async(
        ctx.services, ctx.async_engine, repo, sha, commit_meta, meta, "v1"
    )
    return _created_upload(request, ctx, repo, sha, upload_id, body)


@router.post("/commits/{sha}/reports/{code}/uploads")
async def create_upload(
    request: Request, sha: str, code: str, repo: Repo, ctx: Ctx
) -> JSONResponse:
    body = await read_body(request, UploadBody)
    _check_upload(request, ctx, code, body)
    return await _start_upload(request, ctx, repo, _path_sha(sha), body, CommitMeta())


@router.post("/upload-coverage")
async def upload_coverage(request: Request, repo: Repo, ctx: Ctx) -> JSONResponse:
    body = await read_body(request, UploadCoverageBody)
    _check_upload(request, ctx, body.code, body)
    return await _start_upload(request, ctx, repo, body.commitid, body, body.commit_meta())


@router.post("/commits/{sha}/upload-complete")
async def upload_complete(sha: str, repo: Repo, ctx: Ctx) -> JSONResponse:
    sha = _path_sha(sha)

    def count() -> JSONResponse:
        with ctx.services.sessions() as session:
            commit = find_commit(session, repo.name, sha)
        if commit is None:
            counts = dict.fromkeys(
                ("uploads_total", "uploads_success", "uploads_processing", "uploads_error"), 0
            )
            return JSONResponse(counts, status_code=404)
        counts = upload_counts(ctx.services, commit.id)
        return JSONResponse(counts, status_code=200 if counts["uploads_total"] else 404)

    return await run_in_threadpool(count)


class EmptyUploadBody(BaseModel):
    model_config = ConfigDict(extra="ignore")
    should_force: bool = False


@router.post("/commits/{sha}/empty-upload")
async def empty_upload(request: Request, sha: str, repo: Repo, ctx: Ctx) -> dict[str, Any]:
    await read_body(request, EmptyUploadBody)
    sha = _path_sha(sha)

    def store() -> None:
        with ctx.services.sessions.begin() as session:
            upsert_commit(session, repo, sha, CommitMeta())

    await run_in_threadpool(store)
    return {
        "result": "the commit has no coverage to upload; nothing was stored",
        "non_ignored_files": [],
    }
