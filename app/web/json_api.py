"""The pages' JSON under ``/api/v1/repos``: repositories, commits, a commit,
a file; each the data of its page (:mod:`app.web.page_data`)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import (
    Response,
)

from app.web.deps import PageServices, ReadableRepo
from app.web.page_data import commit_data, commits_data, file_data, repositories_data
from app.web.responses import as_json

router = APIRouter(include_in_schema=False)


@router.get("/api/v1/repos")
def api_repos(request: Request, services: PageServices) -> Response:
    return as_json({"repositories": repositories_data(request, services)})


@router.get("/api/v1/repos/{owner}/{name}/commits")
def api_commits(
    request: Request, wanted: ReadableRepo, services: PageServices, offset: int = 0
) -> Response:
    return as_json(commits_data(request, services, wanted, offset))


@router.get("/api/v1/repos/{owner}/{name}/commits/{sha}")
def api_commit(
    request: Request, wanted: ReadableRepo, services: PageServices, sha: str
) -> Response:
    return as_json(commit_data(request, services, wanted, sha))


@router.get("/api/v1/repos/{owner}/{name}/commits/{sha}/file")
def api_file_by_query(
    request: Request, wanted: ReadableRepo, services: PageServices, sha: str, path: str
) -> Response:
    return api_file(request, wanted, services, sha, path)


@router.get("/api/v1/repos/{owner}/{name}/commits/{sha}/files/{path:path}")
def api_file(
    request: Request, wanted: ReadableRepo, services: PageServices, sha: str, path: str
) -> Response:
    return as_json(file_data(request, services, wanted, sha, path))
