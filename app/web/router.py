"""The pages and their JSON: repositories, commits, a commit, a file, the badge.

``pages_router(settings)`` is an ``APIRouter`` for ``create_app`` to include,
and ``install_page_handlers(api)`` the answer to a repository or commit the
request may not see. Handlers are module-level, as in ``app/api``: the
``readable_repo`` dependency names the URL's repository and the tokens the
request presents, and its ``open(session)`` raises ``NotVisible`` for one it
may not read, answered by one exception handler; each page and its JSON share
one data function (``commit_data``, ...) and differ only in the renderer (a
Jinja template, or ``as_json``). Handlers are plain ``def`` (FastAPI runs them in its thread
pool): they only read PostgreSQL, and Redis for the operations page.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.responses import (
    HTMLResponse,
    JSONResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from sqlalchemy.orm import Session

from app.db.models import Commit, Repository
from app.figures import display_rounding
from app.pullrequests.numbers import DisplayRounding
from app.runtime.services import Services
from app.settings import Settings
from app.web import access, history, lines, ops, pullpages, pulls, queries, signin, svg, tree
from app.web.forms import STALE_FORM, form_page, read_form, set_login_cookie
from app.web.forms import safe_next as _safe_next
from app.web.render import STATIC, environment
from app.web.reports import ReportCache
from app.web.tests import commit_tests_data

#: The vendored assets, by URL name (nothing is fetched from elsewhere).
STATIC_TYPES = {
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
}
PRIVATE_CACHE = "private, no-store"

_env = environment()


class NotVisible(Exception):
    """Unknown, or private without the read token: the same 404 either way.

    Raised anywhere under a handler; :func:`install_page_handlers` answers it
    with the 404 page, ``{"detail": "not found"}`` under ``/api/``, or a bare
    404 where ``bare`` (the badge: an image has no page to show).
    """

    def __init__(self, *, bare: bool = False) -> None:
        super().__init__("not found")
        self.bare = bare


# -- dependencies -------------------------------------------------------------------


async def services_of(request: Request) -> Services:
    """FastAPI dependency: the process's ``Services`` (``app.api.context.ApiContext``).
    ``async``: nothing to wait for, so no trip to the thread pool."""
    services: Services = request.app.state.ctx.services
    return services


async def settings_of(request: Request) -> Settings:
    """FastAPI dependency: the settings the app was built with."""
    settings: Settings = request.app.state.ctx.settings
    return settings


PageServices = Annotated[Services, Depends(services_of)]
PageSettings = Annotated[Settings, Depends(settings_of)]

_cache_lock = threading.Lock()


def report_cache(request: Request, services: Services) -> ReportCache:
    """The app's cache of merged reports, made on first use (one per app: two
    apps in one process may read two databases)."""
    state = request.app.state
    with _cache_lock:
        cache: ReportCache | None = getattr(state, "page_report_cache", None)
        if cache is None:
            cache = state.page_report_cache = ReportCache(services.limits)
    return cache


@dataclass(frozen=True, slots=True)
class RepoRequest:
    """The repository a URL names, and the read-token hashes the request presents."""

    owner: str
    name: str
    hashes: tuple[str, ...]
    #: Whether the signed-in user may read a private repository (app/web/signin.py).
    reader: Callable[[Repository], bool] | None = None

    def open(self, session: Session, *, bare: bool = False) -> Repository:
        """The repository, if the request may read it; else ``NotVisible``.
        Read in the handler's own session: one session per request."""
        repo = queries.find_repository(session, f"{self.owner}/{self.name}")
        if repo is None or not (
            access.can_read(repo, self.hashes) or (self.reader and self.reader(repo))
        ):
            raise NotVisible(bare=bare)
        return repo


def repo_request(request: Request, owner: str, name: str) -> RepoRequest:
    hashes = access.presented_hashes(request.headers, request.cookies)
    return RepoRequest(owner, name, tuple(hashes), functools.partial(signin.may_read, request))


async def readable_repo(request: Request, owner: str, name: str) -> RepoRequest:
    """FastAPI dependency: the URL's repository as this request may read it
    (``.open(session)`` raises ``NotVisible`` otherwise). ``async`` and
    without I/O: the lookup runs in the handler's session, after FastAPI
    has validated the query. The nested-name routes call ``repo_request``."""
    return repo_request(request, owner, name)


ReadableRepo = Annotated[RepoRequest, Depends(readable_repo)]


def install_page_handlers(api: FastAPI) -> None:
    """The one answer to ``NotVisible``, for every page, JSON and badge."""

    @api.exception_handler(NotVisible)
    async def _not_visible(request: Request, exc: NotVisible) -> Response:
        if exc.bare:
            return Response("not found", status_code=404)
        return not_found(request)


# -- renderers -----------------------------------------------------------------------


def page(template: str, status: int = 200, **values: Any) -> HTMLResponse:
    html = _env.get_template(template).render(**values)
    return HTMLResponse(html, status_code=status, headers={"Cache-Control": PRIVATE_CACHE})


def streamed_page(template: str, **values: Any) -> Response:
    """A page rendered while it is sent: a client that goes away stops
    the rendering (Starlette stops iterating at its disconnect)."""
    chunks = _batched(_env.get_template(template).generate(**values))
    return StreamingResponse(
        chunks, media_type="text/html; charset=utf-8", headers={"Cache-Control": PRIVATE_CACHE}
    )


def as_json(data: Any) -> JSONResponse:
    # What a page shows depends on the tokens presented: never a shared cache's.
    return JSONResponse(data, headers={"Cache-Control": PRIVATE_CACHE})


def not_found(request: Request, what: str = "This page does not exist.") -> Response:
    if request.url.path.startswith("/api/"):
        return JSONResponse({"detail": "not found"}, status_code=404)
    return page("404.html", status=404, what=what, next=request.url.path)


# -- what a page and its JSON show ----------------------------------------------------


def repositories_data(request: Request, services: Services) -> list[dict[str, Any]]:
    hashes = access.presented_hashes(request.headers, request.cookies)
    with services.sessions() as session:
        visible = access.readable_private_ids(session, hashes)
        visible |= signin.readable_ids(request, session)
        return queries.repositories(session, visible)


@contextmanager
def _opened(
    request: Request, services: Services, wanted: RepoRequest
) -> Iterator[tuple[Session, ReportCache, Repository]]:
    """A session, the app's report cache and the repository the request names
    (``NotVisible`` if it may not see it): what a repository's pages read."""
    cache = report_cache(request, services)
    with services.sessions() as session:
        yield session, cache, wanted.open(session)


#: Commits the repository page lists at once (its chart shows the year; the
#: JSON lists 50): each row is its base looked up, a few queries.
REPOSITORY_PAGE_COMMITS = 20


def commits_data(
    request: Request, services: Services, wanted: RepoRequest, offset: int, limit: int = 50
) -> dict[str, Any]:
    with _opened(request, services, wanted) as (session, cache, repo):
        return queries.repository_commits(
            session, cache, repo, offset=_bounded(offset), limit=limit
        )


def commit_data(
    request: Request, services: Services, wanted: RepoRequest, sha: str
) -> dict[str, Any]:
    with _opened(request, services, wanted) as (session, cache, repo):
        found = _visible_commit(session, repo, sha)
        data = queries.commit_page(session, cache, repo, found, **_table_args(request))
        data["tests"] = commit_tests_data(services, session, repo, found)  # app/testresults
        # What the Git provider said (app/web/pullpages.py).
        data["pull_feedback"] = pullpages.commit_pull(session, found)
        data["tree"] = tree.commit_tree(session, cache, found, data, dict(request.query_params))
        return data


def file_data(
    request: Request, services: Services, wanted: RepoRequest, sha: str, path: str
) -> dict[str, Any]:
    with _opened(request, services, wanted) as (session, cache, repo):
        found = _visible_commit(session, repo, sha)
        start = _int_arg(request, "from", 1)
        data = lines.file_page(session, cache, repo, found, path, start=start)
        if data is None:
            raise NotVisible
        data["rounding"] = display_rounding(session, repo.id).to_json()
        data["added"] = pullpages.added_lines(session, found, path)  # the pull request's patch
    # the source at the commit, through the provider
    source = pullpages.file_source(services, repo, found, path)
    page = pullpages.source_page(source, data["lines"], data["window"], start) if source else None
    data["source"] = page["rows"] if page else None
    data["source_window"] = {k: v for k, v in page.items() if k != "rows"} if page else None
    return data


def _visible_commit(session: Session, repo: Repository, sha: str) -> Commit:
    commit = queries.find_commit(session, repo, sha)
    if commit is None:
        raise NotVisible
    return commit


def _table_args(request: Request) -> dict[str, Any]:
    q = request.query_params
    try:
        number = int(q.get("page", "1"))
    except ValueError:
        number = 1
    return {
        "sort": q.get("sort", "name"),
        "descending": q.get("order", "asc") == "desc",
        "query": q.get("q", "")[:200],
        "page": number,
    }


# -- assets and sign-in (before /{owner}/{repo}: "-" is a valid owner) ---------------

entry_router = APIRouter(include_in_schema=False)


@entry_router.get("/-/static/{name}")
def static(name: str) -> Response:
    path = STATIC / name
    kind = STATIC_TYPES.get(path.suffix)
    if kind is None or "/" in name or not path.is_file():
        return Response("not found", status_code=404)
    return Response(path.read_bytes(), media_type=kind, headers={"Cache-Control": "max-age=3600"})


@entry_router.get("/favicon.ico")
def favicon() -> Response:  # what browsers ask for on a page without <link rel=icon>
    return static("favicon.svg")


def login_page(request: Request, settings: Settings, status: int = 200, **values: Any) -> Response:
    return form_page(request, settings, page, "login.html", status, **values)


@entry_router.get("/-/login", response_class=HTMLResponse)
def login_form(request: Request, settings: PageSettings) -> Response:
    target = _safe_next(request.query_params.get("next"))
    return login_page(request, settings, next=target, error=None)


@entry_router.post("/-/login")
async def login(request: Request, settings: PageSettings) -> Response:
    form = await read_form(request)
    token = form.get("token", "").strip()
    target = _safe_next(form.get("next", "/"))
    if not access.csrf_matches(request.cookies, form.get("csrf", "")):
        return login_page(request, settings, 403, next=target, error=STALE_FORM)
    if not token or len(token) > access.MAX_TOKEN_CHARS:
        return login_page(request, settings, 400, next=target, error="Enter a read token.")
    held = access.cookie_hashes(request.cookies.get(access.READ_COOKIE, ""))
    hashed = access.hash_token(token)
    kept = [h for h in held if h != hashed][-(access.MAX_COOKIE_TOKENS - 1) :]
    response = RedirectResponse(target, status_code=303)
    tokens = " ".join([*kept, hashed])
    set_login_cookie(
        response,
        request,
        settings,
        access.READ_COOKIE,
        tokens,
        samesite="lax",
        max_age=30 * 24 * 3600,
    )
    return response


# -- JSON ---------------------------------------------------------------------------

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


# -- pages --------------------------------------------------------------------------


@router.get("/", response_class=HTMLResponse)
def index(request: Request, services: PageServices) -> Response:
    return page("index.html", repositories=repositories_data(request, services))


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
    data = file_data(request, services, wanted, sha, path)
    added = frozenset(data["added"])
    return streamed_page(
        "file.html",
        data=data,
        rounding=_rounding(data),
        rows=lines.rows_html(lines.line_blocks(data["lines"]), data["stops"], added),
        leads=lines.lead_links(data["stops"]),  # numbers only
        added=added,
        args=dict(request.query_params),
    )


# -- repositories with nested names (GitLab groups: group/sub/name) ------------------
# The routes above take OWNER/NAME; these take any depth, last of all.


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
        return api_commits(request, wanted, services, _offset(request))
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
        return repository(request, owner, name, wanted, services, _offset(request))
    owner, name, rest = split
    wanted = repo_request(request, owner, name)
    return _commit_or_file(request, wanted, services, rest, "file", commit, file)


def _nested_own(
    request: Request, parts: list[str], services: Services, page: bool = False
) -> Response:
    """A nested name's pull requests (page or JSON) or coverage series."""
    wanted = repo_request(request, "/".join(parts[:-2]), parts[-2])
    offset, q = _offset(request), request.query_params
    if parts[-1] == "pulls":
        return pulls.pulls_answer(services, wanted, offset, _pulls_page if page else as_json)
    limit = _int_arg(request, "limit", history.HISTORY_POINTS)
    return history.coverage_answer(services, wanted, as_json, q.get("branch"), q.get("flag"), limit)


def _pulls_page(data: dict[str, Any]) -> Response:
    return page("pulls.html", data=data, rounding=_rounding(data))


def pages_router(settings: Settings) -> APIRouter:
    """The pages, their JSON and the badge, in the order their paths must be
    tried: assets and sign-in, the operations page, then the repositories'
    pages (whose ``/{owner}/{name}`` matches widely), nested names last.
    ``create_app`` also calls :func:`install_page_handlers`."""
    pages = APIRouter(include_in_schema=False)
    pages.include_router(entry_router)
    signin.add_routes(pages)
    ops.add_routes(pages, settings, _context_services, page)
    # Pages of their own modules, before /{owner}/{name}: they take this module's helpers.
    history.add_routes(pages, services_of=_context_services, repo_of=repo_request, as_json=as_json)
    pulls.add_routes(
        pages, services_of=_context_services, repo_of=repo_request, as_json=as_json, page=page
    )
    pages.include_router(router)
    return pages


def _rounding(data: dict[str, Any]) -> DisplayRounding:
    """How a page shows its coverage figures: as its JSON's ``rounding`` says."""
    given = data.get("rounding")
    return DisplayRounding(**given) if given else DisplayRounding()


def _context_services(request: Request) -> Services:
    services: Services = request.app.state.ctx.services  # app.api.context.ApiContext
    return services


#: Largest offset a listing takes (past every row; the database's integer).
MAX_OFFSET = 2**31 - 1


def _bounded(offset: int) -> int:
    return min(max(0, offset), MAX_OFFSET)


def _offset(request: Request) -> int:
    return _int_arg(request, "offset", 0)


def _int_arg(request: Request, name: str, default: int) -> int:
    try:
        return _bounded(int(request.query_params.get(name, str(default))[:20]))
    except ValueError:
        return default


#: Characters of a page sent at once while it renders.
PAGE_CHUNK_CHARS = 64 * 1024


def _batched(parts: Iterator[str]) -> Iterator[bytes]:
    """Jinja's many small strings as a few large chunks (each chunk is one
    trip to the thread pool)."""
    batch: list[str] = []
    size = 0
    for part in parts:
        batch.append(part)
        size += len(part)
        if size >= PAGE_CHUNK_CHARS:
            yield "".join(batch).encode()
            batch, size = [], 0
    if batch:
        yield "".join(batch).encode()
