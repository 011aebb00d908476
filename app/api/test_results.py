"""``POST /upload/test_results/v1``: codecov-cli's ``--report-type test_results``.

The CLI creates the commit first (``POST .../commits``, the coverage
route), then calls this route with the repository as an encoded slug in
the body and the upload token in the ``Authorization`` header, and PUTs
``{"test_results_files": [...]}`` to the ``raw_upload_location`` it gets.
The upload is an ordinary upload row (``payload_format`` ``test_results``),
so the same signed single-use PUT URL, size limits, cap on slots awaiting
their PUT per commit (:mod:`app.api.slots`), storage, processor, sweep and
notification carry it; only its parsing differs
(:mod:`app.testresults.store`).

With ``file_not_found: true`` the CLI found no JUnit file and will PUT
nothing: as Codecov does, the commit is created and the answer is a 201
without a body (and without an upload, which would wait for a payload
that never comes).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Header, Request
from fastapi.responses import JSONResponse, Response
from pydantic import Field, field_validator
from starlette.concurrency import run_in_threadpool

from app.api.auth import (
    authorise,
    authorise_cached,
    decode_slug,
    raise_refused,
    token_from_header,
)
from app.api.bodies import UploadBody, full_sha
from app.api.context import ApiContext, context
from app.api.links import put_url, result_url
from app.api.slots import check_slots
from app.db.models import Repository
from app.ingest.store import CommitMeta, add_awaiting_upload_async, upsert_commit
from app.testresults.store import TEST_RESULTS_PAYLOAD

router = APIRouter()
Ctx = Annotated[ApiContext, Depends(context)]
Auth = Annotated[str | None, Header()]


class TestResultsBody(UploadBody):
    """What codecov-cli 11 sends: the upload's fields as the coverage routes
    take them, plus the repository and commit (``version`` is ignored)."""

    __test__ = False  # not a pytest test class
    slug: str = Field(max_length=512)
    commit: str
    service: str | None = Field(None, max_length=32)
    branch: str | None = Field(None, max_length=1024)

    @field_validator("commit")
    @classmethod
    def _commit(cls, value: str) -> str:
        return full_sha(value)


async def _repository(
    ctx: ApiContext, body: TestResultsBody, authorization: str | None
) -> Repository:
    """The repository the slug names, if the token opens it (401 otherwise).
    Without a ``service`` (``--git-service`` not given) the repository's own
    is taken; an unknown repository then gets the 401 (same words, same
    token check) a wrong token for a known one gets, so the route tells a
    stranger nothing about which repositories exist."""
    name, token = decode_slug(body.slug), token_from_header(authorization)
    service = body.service
    if not service:
        row = await run_in_threadpool(ctx.repositories.get, ctx.services, name)
        if row is None:
            raise_refused(name, token)
        service = row.service
    repo = authorise_cached(service, name, token, ctx.repositories)
    if repo is None:
        repo = await run_in_threadpool(
            authorise, ctx.services, service, name, token, ctx.repositories
        )
    return repo


def _create_commit(ctx: ApiContext, repo: Repository, sha: str, branch: str | None) -> None:
    with ctx.services.sessions.begin() as session:
        upsert_commit(session, repo, sha, CommitMeta(branch=branch))


@router.post("/upload/test_results/v1")
async def create_test_results_upload(
    request: Request, body: TestResultsBody, ctx: Ctx, authorization: Auth = None
) -> Response:
    repo = await _repository(ctx, body, authorization)
    body.check_declared_size(ctx.settings.max_upload_bytes)
    if body.file_not_found:
        await run_in_threadpool(_create_commit, ctx, repo, body.commit, body.branch)
        return Response(status_code=201)
    await check_slots(ctx.services, ctx.async_engine, repo, body.commit)  # the coverage routes' cap
    upload_id = await add_awaiting_upload_async(
        ctx.services,
        ctx.async_engine,
        repo,
        body.commit,
        CommitMeta(branch=body.branch),
        body.upload_meta(),
        TEST_RESULTS_PAYLOAD,
    )
    return JSONResponse(
        {
            "external_id": str(upload_id),
            "raw_upload_location": put_url(request, ctx, upload_id),
            "url": result_url(request, ctx, repo.name, body.commit),
            "state": "started",
            "upload_type": "test_results",
            "flags": body.flags or [],
        },
        status_code=201,
    )
