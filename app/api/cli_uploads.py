"""The codecov-cli endpoints: create-commit, create-report, create-upload,
the single-call upload-coverage, upload-complete and empty-upload.

Each authorises first (404 unknown service/repository, 401 token), so a
refused request stores nothing. Most handlers are plain functions: FastAPI
runs them in its thread pool, next to the blocking database calls they make.
create-upload and upload-coverage, the calls of every CI job, run on the
event loop: their one statement goes through an asyncio engine on
PostgreSQL, so they do not queue in the thread pool behind payload work.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, field_validator
from starlette.concurrency import run_in_threadpool

from app.api.auth import authorise, authorise_cached, decode_slug, token_from_header
from app.api.context import ApiContext, context
from app.api.errors import ApiError
from app.api.links import put_url, result_url
from app.db.models import Commit, Repository
from app.errors import InvalidUpload
from app.ingest.store import (
    CommitMeta,
    UploadMeta,
    add_awaiting_upload_async,
    upload_counts,
    upsert_commit,
)
from app.pipeline.uploads import find_commit, validate_flags, validate_sha

router = APIRouter(prefix="/upload/{service}/{slug}")
Ctx = Annotated[ApiContext, Depends(context)]
Auth = Annotated[str | None, Header()]


def _sha(value: str) -> str:
    try:
        return validate_sha(value)
    except InvalidUpload as exc:
        raise ValueError(str(exc)) from None


def _pullid(value: Any) -> int | None:
    if value in (None, "", "null", "None", "false"):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ValueError(f"pull request number {value!r} is not an integer") from None


class CommitBody(BaseModel):
    model_config = ConfigDict(extra="ignore")
    commitid: str
    branch: str | None = Field(None, max_length=1024)
    parent_commit_id: str | None = None
    pullid: int | None = None

    @field_validator("commitid")
    @classmethod
    def _commitid(cls, value: str) -> str:
        return _sha(value)

    @field_validator("parent_commit_id")
    @classmethod
    def _parent(cls, value: str | None) -> str | None:
        return _sha(value) if value else None

    @field_validator("pullid", mode="before")
    @classmethod
    def _pull(cls, value: Any) -> int | None:
        return _pullid(value)

    def commit_meta(self) -> CommitMeta:
        return CommitMeta(self.branch, self.parent_commit_id, self.pullid)


class ReportBody(BaseModel):
    model_config = ConfigDict(extra="ignore")
    code: str | None = "default"


class UploadBody(BaseModel):
    model_config = ConfigDict(extra="ignore")
    ci_service: str | None = Field(None, max_length=64)
    ci_url: str | None = Field(None, max_length=2048)
    env: dict[str, str | None] | None = None
    flags: list[str] | None = None
    job_code: str | None = Field(None, max_length=255)
    name: str | None = Field(None, max_length=255)
    file_not_found: bool = False
    report_payload_bytes: int | None = Field(None, ge=0)
    cli_args: dict[str, Any] | None = None

    @field_validator("flags")
    @classmethod
    def _flags(cls, value: list[str] | None) -> list[str]:
        try:
            return validate_flags([f.strip() for f in value or [] if f.strip()])
        except InvalidUpload as exc:
            raise ValueError(str(exc)) from None

    def upload_meta(self) -> UploadMeta:
        build = (self.cli_args or {}).get("build_code")
        return UploadMeta(
            flags=list(self.flags or []),
            name=self.name,
            job_code=self.job_code,
            build_code=str(build) if build else None,
            build_url=self.ci_url,
            ci_service=self.ci_service,
            env=self.env,
        )


class UploadCoverageBody(UploadBody, CommitBody):
    code: str | None = "default"


def _check_code(code: str | None) -> None:
    if code not in (None, "", "default"):
        raise ApiError(400, f"report code {code!r}: only the default report is supported")


def _repo(ctx: ApiContext, service: str, slug: str, authorization: str | None) -> Repository:
    name, token = decode_slug(slug), token_from_header(authorization)
    return authorise(ctx.services, service, name, token, ctx.repositories)


async def _repo_on_loop(
    ctx: ApiContext, service: str, slug: str, authorization: str | None
) -> Repository:
    """``_repo`` for an async handler: a cached repository is checked on the
    event loop (a hash and a constant-time compare); a miss reads it in the
    thread pool."""
    name, token = decode_slug(slug), token_from_header(authorization)
    repo = authorise_cached(service, name, token, ctx.repositories)
    if repo is None:
        return await run_in_threadpool(
            authorise, ctx.services, service, name, token, ctx.repositories
        )
    return repo


def _check_size(ctx: ApiContext, size: int | None) -> None:
    limit = ctx.settings.max_upload_bytes
    if size is not None and size > limit:
        raise ApiError(413, f"the payload of {size} bytes is over the limit of {limit} bytes")


def _commit_json(commit: Commit) -> dict[str, Any]:
    return {
        "commitid": commit.sha,
        "branch": commit.branch,
        "parent_commit_id": commit.parent_commit_id,
        "pullid": commit.pullid,
        "timestamp": commit.created_at.isoformat() if commit.created_at else None,
    }


@router.post("/commits", status_code=201)
def create_commit(
    service: str, slug: str, body: CommitBody, ctx: Ctx, authorization: Auth = None
) -> dict[str, Any]:
    repo = _repo(ctx, service, slug, authorization)
    with ctx.services.sessions.begin() as session:
        commit = upsert_commit(session, repo, body.commitid, body.commit_meta())
        return _commit_json(commit)


@router.post("/commits/{sha}/reports", status_code=201)
def create_report(
    service: str, slug: str, sha: str, body: ReportBody, ctx: Ctx, authorization: Auth = None
) -> dict[str, Any]:
    repo = _repo(ctx, service, slug, authorization)
    _check_code(body.code)
    sha = _path_sha(sha)
    with ctx.services.sessions.begin() as session:
        commit = upsert_commit(session, repo, sha, CommitMeta())
        return {"external_id": f"{commit.id}", "commit_sha": commit.sha, "code": "default"}


def _path_sha(sha: str) -> str:
    try:
        return validate_sha(sha)
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


@router.post("/commits/{sha}/reports/{code}/uploads")
async def create_upload(
    request: Request,
    service: str,
    slug: str,
    sha: str,
    code: str,
    body: UploadBody,
    ctx: Ctx,
    authorization: Auth = None,
) -> JSONResponse:
    repo = await _repo_on_loop(ctx, service, slug, authorization)
    _check_code(code)
    _check_size(ctx, body.report_payload_bytes)
    sha = _path_sha(sha)
    meta = body.upload_meta()
    upload_id = await add_awaiting_upload_async(
        ctx.services, ctx.async_engine, repo, sha, CommitMeta(), meta, "v1"
    )
    return _created_upload(request, ctx, repo, sha, upload_id, body)


@router.post("/upload-coverage")
async def upload_coverage(
    request: Request,
    service: str,
    slug: str,
    body: UploadCoverageBody,
    ctx: Ctx,
    authorization: Auth = None,
) -> JSONResponse:
    repo = await _repo_on_loop(ctx, service, slug, authorization)
    _check_code(body.code)
    _check_size(ctx, body.report_payload_bytes)
    sha, meta = body.commitid, body.upload_meta()
    upload_id = await add_awaiting_upload_async(
        ctx.services, ctx.async_engine, repo, sha, body.commit_meta(), meta, "v1"
    )
    return _created_upload(request, ctx, repo, sha, upload_id, body)


@router.post("/commits/{sha}/upload-complete")
def upload_complete(
    service: str, slug: str, sha: str, ctx: Ctx, authorization: Auth = None
) -> JSONResponse:
    repo = _repo(ctx, service, slug, authorization)
    with ctx.services.sessions() as session:
        commit = find_commit(session, repo.name, _path_sha(sha))
    if commit is None:
        counts = dict.fromkeys(
            ("uploads_total", "uploads_success", "uploads_processing", "uploads_error"), 0
        )
        return JSONResponse(counts, status_code=404)
    counts = upload_counts(ctx.services, commit.id)
    return JSONResponse(counts, status_code=200 if counts["uploads_total"] else 404)


class EmptyUploadBody(BaseModel):
    model_config = ConfigDict(extra="ignore")
    should_force: bool = False


@router.post("/commits/{sha}/empty-upload")
def empty_upload(
    service: str, slug: str, sha: str, body: EmptyUploadBody, ctx: Ctx, authorization: Auth = None
) -> dict[str, Any]:
    repo = _repo(ctx, service, slug, authorization)
    with ctx.services.sessions.begin() as session:
        upsert_commit(session, repo, _path_sha(sha), CommitMeta())
    return {
        "result": "the commit has no coverage to upload; nothing was stored",
        "non_ignored_files": [],
    }
