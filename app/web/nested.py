"""Repositories with nested names (GitLab groups: ``group/sub/name``).

The pages and JSON routes take ``OWNER/NAME``; these take any depth and are
tried last of all, answering with the same handlers."""

from __future__ import annotations

from collections.abc import Callable

from fastapi import APIRouter, Request
from fastapi.responses import (
    HTMLResponse,
    Response,
)

from app.runtime.services import Services
from app.web import history, pulls
from app.web.deps import PageServices, RepoRequest, int_arg, offset_arg, repo_request
from app.web.json_api import api_commit, api_commits, api_file
from app.web.pages import badge, commit, file, pulls_page, repository
from app.web.responses import as_json, not_found

router = APIRouter(include_in_schema=False)


def _split_nested(parts: list[str], marker: str, end: int) -> tuple[str, str, list[str]] | None:
    """OWNER (any depth), NAME and what follows the first ``marker`` among
    ``parts[2:end]``; None if there is none."""
    at = next((i for i in range(2, end) if parts[i] == marker), None)
    if at is None:
        return None
    return "/".join(parts[: at - 1]), parts[at - 1], parts[at + 1 :]


def _commit_or_file(
    request: Request,
    wanted: RepoRequest,
    services: Services,
    rest: list[str],
    word: str,
    commit_view: Callable[[Request, RepoRequest, Services, str], Response],
    file_view: Callable[[Request, RepoRequest, Services, str, str], Response],
) -> Response:
    """What follows a nested name's ``commit`` (pages) or ``commits`` (JSON):
    ``SHA``, the commit; ``SHA/<word>/PATH`` or ``SHA/file?path=PATH``, a file
    of it; anything else is not found."""
    if len(rest) == 1:
        return commit_view(request, wanted, services, rest[0])
    if len(rest) > 2 and rest[1] == word:
        path = "/".join(rest[2:])
    elif len(rest) == 2 and rest[1] == "file":
        path = request.query_params.get("path", "")
    else:
        return not_found(request)
    return file_view(request, wanted, services, rest[0], path)


@router.get("/api/v1/repos/{slug:path}")
def api_nested(request: Request, slug: str, services: PageServices) -> Response:
    parts = slug.split("/")
    if len(parts) >= 4 and parts[-1] in ("coverage", "pulls"):  # app/web/history.py, pulls.py
        return _nested_own(request, parts, services)
    split = _split_nested(parts, "commits", len(parts))
    if split is None:
        return not_found(request)
    owner, name, rest = split
    wanted = repo_request(request, owner, name)
    if not rest:
        return api_commits(request, wanted, services, offset_arg(request))
    return _commit_or_file(request, wanted, services, rest, "files", api_commit, api_file)


@router.get("/{slug:path}", response_class=HTMLResponse)
def page_nested(request: Request, slug: str, services: PageServices) -> Response:
    parts = slug.split("/")
    if len(parts) >= 3 and parts[-1] == "badge.svg":
        wanted = repo_request(request, "/".join(parts[:-2]), parts[-2])
        return badge(wanted, services, request.query_params.get("branch"))
    if len(parts) >= 4 and parts[-1] == "pulls":
        return _nested_own(request, parts, services, page=True)
    split = _split_nested(parts, "commit", len(parts) - 1)
    if split is None:
        if len(parts) < 2 or "" in parts:
            return not_found(request)
        owner, name = "/".join(parts[:-1]), parts[-1]
        wanted = repo_request(request, owner, name)
        return repository(request, owner, name, wanted, services, offset_arg(request))
    owner, name, rest = split
    wanted = repo_request(request, owner, name)
    return _commit_or_file(request, wanted, services, rest, "file", commit, file)


def _nested_own(
    request: Request, parts: list[str], services: Services, page: bool = False
) -> Response:
    """A nested name's pull requests (page or JSON) or coverage series."""
    wanted = repo_request(request, "/".join(parts[:-2]), parts[-2])
    offset, q = offset_arg(request), request.query_params
    if parts[-1] == "pulls":
        return pulls.pulls_answer(services, wanted, offset, pulls_page if page else as_json)
    limit = int_arg(request, "limit", history.HISTORY_POINTS)
    return history.coverage_answer(services, wanted, as_json, q.get("branch"), q.get("flag"), limit)
