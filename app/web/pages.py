"""The pages: repositories, a repository, a commit, a file, and the coverage badge."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import (
    HTMLResponse,
    RedirectResponse,
    Response,
)

from app.pullrequests.numbers import DisplayRounding
from app.web import access, history, lines, queries, signin, svg
from app.web.deps import PageServices, ReadableRepo
from app.web.page_data import (
    REPOSITORY_PAGE_COMMITS,
    commit_data,
    commits_data,
    file_data,
    file_lead,
    repositories_data,
)
from app.web.responses import PRIVATE_CACHE, page, streamed_page

router = APIRouter(include_in_schema=False)


@router.get("/", response_class=HTMLResponse)
def index(request: Request, services: PageServices) -> Response:
    return page(
        "index.html",
        repositories=repositories_data(request, services),
        viewer=signin.viewer_of(request),
        signin_with=signin.offered(request),  # the way in to private repositories
    )


#: Longest branch name a badge looks up (the column's size); a longer one, or
#: one with a NUL, names no branch covworker has: the badge says "unknown".
MAX_BRANCH_CHARS = 255


@router.get("/{owner}/{name}/badge.svg")
def badge(wanted: ReadableRepo, services: PageServices, branch: str | None = None) -> Response:
    """The coverage of ``?branch=NAME``'s newest settled commit (the default
    branch without one), shown as the pages show it."""
    coverage, rounding = None, DisplayRounding()
    with services.sessions() as session:
        repo = wanted.open(session, bare=True)
        if branch is None or (len(branch) <= MAX_BRANCH_CHARS and "\x00" not in branch):
            coverage, rounding = queries.branch_coverage(session, repo, branch)
    return Response(
        svg.badge(coverage, rounding),
        media_type="image/svg+xml",
        headers={"Cache-Control": PRIVATE_CACHE if access.is_private(repo) else "no-cache"},
    )


@router.get("/{owner}/{name}", response_class=HTMLResponse)
def repository(
    request: Request,
    owner: str,
    name: str,
    wanted: ReadableRepo,
    services: PageServices,
    offset: int = 0,
) -> Response:
    data = commits_data(request, services, wanted, offset, REPOSITORY_PAGE_COMMITS)
    data["history"] = history.page_history(request, services, wanted)  # app/web/history.py
    args = dict(request.query_params)
    return page(
        "repository.html", data=data, owner=owner, name=name, rounding=_rounding(data), args=args
    )


@router.get("/{owner}/{name}/commit/{sha}", response_class=HTMLResponse)
def commit(request: Request, wanted: ReadableRepo, services: PageServices, sha: str) -> Response:
    data = commit_data(request, services, wanted, sha)
    return page("commit.html", data=data, args=dict(request.query_params), rounding=_rounding(data))


@router.get("/{owner}/{name}/commit/{sha}/file", response_class=HTMLResponse)
def file_by_query(
    request: Request, wanted: ReadableRepo, services: PageServices, sha: str, path: str
) -> Response:
    """The file page for paths the URL folding would change (render.file_url)."""
    return file(request, wanted, services, sha, path)


@router.get("/{owner}/{name}/commit/{sha}/file/{path:path}", response_class=HTMLResponse)
def file(
    request: Request, wanted: ReadableRepo, services: PageServices, sha: str, path: str
) -> Response:
    lead = file_lead(request, services, wanted, sha, path)
    if lead is not None:  # a link past the page's lines: to the run it leads to
        return RedirectResponse(lead, status_code=303)
    data = file_data(request, services, wanted, sha, path)
    added = frozenset(data["added"])
    args = dict(request.query_params)
    edges = lines.page_edges(data, args)
    return streamed_page(
        "file.html",
        data=data,
        rounding=_rounding(data),
        rows=lines.rows_html(lines.line_blocks(data["lines"]), data["stops"], added, edges),
        leads=lines.lead_links(data["stops"], edges),  # numbers and escaped queries
        edges=edges,
        added=added,
        args=args,
    )


def pulls_page(data: dict[str, Any]) -> Response:
    return page("pulls.html", data=data, rounding=_rounding(data))


def _rounding(data: dict[str, Any]) -> DisplayRounding:
    """How a page shows its coverage figures: as its JSON's ``rounding`` says."""
    given = data.get("rounding")
    return DisplayRounding(**given) if given else DisplayRounding()
