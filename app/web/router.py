"""The pages and their JSON: repositories, commits, a commit, a file, the badge.

``pages_router(settings)`` is an ``APIRouter`` for ``create_app`` to include;
each handler finds the process's ``Services`` through ``services_of(request)``.
Handlers are plain ``def`` (FastAPI runs them in its thread pool): they
only read PostgreSQL, and Redis for the operations page.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import (
    HTMLResponse,
    JSONResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from sqlalchemy.orm import Session

from app.db.models import Commit, Repository
from app.services import Services
from app.settings import Settings
from app.testresults.web import commit_tests_data
from app.web import access, lines, ops, pullpages, queries, svg
from app.web.forms import STALE_FORM, form_page, is_https, read_form
from app.web.render import STATIC, environment
from app.web.reports import ReportCache

ServicesOf = Callable[[Request], Services]

#: The vendored assets, by URL name (nothing is fetched from elsewhere).
STATIC_TYPES = {
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
}
PRIVATE_CACHE = "private, no-store"


def _context_services(request: Request) -> Services:
    services: Services = request.app.state.ctx.services  # app.api.context.ApiContext
    return services


class NotVisible(Exception):
    """Unknown, or private without the read token: the same 404 either way."""


def pages_router(settings: Settings, services_of: ServicesOf = _context_services) -> APIRouter:
    router = APIRouter(include_in_schema=False)
    env = environment()
    cache_holder: dict[str, ReportCache] = {}

    def cache(services: Services) -> ReportCache:
        if "cache" not in cache_holder:
            cache_holder["cache"] = ReportCache(services.limits)
        return cache_holder["cache"]

    def page(template: str, status: int = 200, **values: Any) -> HTMLResponse:
        html = env.get_template(template).render(**values)
        return HTMLResponse(html, status_code=status, headers={"Cache-Control": PRIVATE_CACHE})

    def not_found(request: Request, what: str = "This page does not exist.") -> Response:
        if request.url.path.startswith("/api/"):
            return JSONResponse({"detail": "not found"}, status_code=404)
        return page("404.html", status=404, what=what, next=request.url.path)

    def readable_repo(request: Request, session: Session, owner: str, name: str) -> Repository:
        repo = queries.find_repository(session, f"{owner}/{name}")
        hashes = access.presented_hashes(request.headers, request.cookies)
        if repo is None or not access.can_read(repo, hashes):
            raise NotVisible
        return repo

    def readable_commit(
        request: Request, session: Session, owner: str, name: str, sha: str
    ) -> tuple[Repository, Commit]:
        repo = readable_repo(request, session, owner, name)
        commit = queries.find_commit(session, repo, sha)
        if commit is None:
            raise NotVisible
        return repo, commit

    def table_args(request: Request) -> dict[str, Any]:
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

    # -- assets and sign-in (before /{owner}/{repo}: "-" is a valid owner) ----

    @router.get("/-/static/{name}")
    def static(name: str) -> Response:
        path = STATIC / name
        kind = STATIC_TYPES.get(path.suffix)
        if kind is None or "/" in name or not path.is_file():
            return Response("not found", status_code=404)
        return Response(
            path.read_bytes(), media_type=kind, headers={"Cache-Control": "max-age=3600"}
        )

    @router.get("/favicon.ico")
    def favicon() -> Response:  # what browsers ask for on a page without <link rel=icon>
        return static("favicon.svg")

    def login_page(request: Request, status: int = 200, **values: Any) -> Response:
        return form_page(request, settings, page, "login.html", status, **values)

    @router.get("/-/login", response_class=HTMLResponse)
    def login_form(request: Request) -> Response:
        return login_page(request, next=_safe_next(request.query_params.get("next")), error=None)

    @router.post("/-/login")
    async def login(request: Request) -> Response:
        form = await read_form(request)
        token = form.get("token", "").strip()
        target = _safe_next(form.get("next", "/"))
        if not access.csrf_matches(request.cookies, form.get("csrf", "")):
            return login_page(request, 403, next=target, error=STALE_FORM)
        if not token or len(token) > access.MAX_TOKEN_CHARS:
            return login_page(request, 400, next=target, error="Enter a read token.")
        held = access.cookie_hashes(request.cookies.get(access.READ_COOKIE, ""))
        hashed = access.hash_token(token)
        kept = [h for h in held if h != hashed][-(access.MAX_COOKIE_TOKENS - 1) :]
        response = RedirectResponse(target, status_code=303)
        response.set_cookie(
            access.READ_COOKIE,
            " ".join([*kept, hashed]),
            httponly=True,
            samesite="lax",
            secure=is_https(request, settings),
            max_age=30 * 24 * 3600,
        )
        return response

    ops.add_routes(router, settings, services_of, page)

    # -- JSON -------------------------------------------------------------------

    @router.get("/api/v1/repos")
    def api_repos(request: Request) -> Response:
        # The listing depends on the tokens presented: never a shared cache's.
        return JSONResponse(
            {"repositories": _repositories(request)}, headers={"Cache-Control": PRIVATE_CACHE}
        )

    @router.get("/api/v1/repos/{owner}/{name}/commits")
    def api_commits(request: Request, owner: str, name: str, offset: int = 0) -> Response:
        services = services_of(request)
        with services.sessions() as session:
            try:
                repo = readable_repo(request, session, owner, name)
            except NotVisible:
                return not_found(request)
            data = queries.repository_commits(
                session, cache(services), repo, offset=_bounded(offset)
            )
        return JSONResponse(data, headers={"Cache-Control": PRIVATE_CACHE})

    @router.get("/api/v1/repos/{owner}/{name}/commits/{sha}")
    def api_commit(request: Request, owner: str, name: str, sha: str) -> Response:
        data = _commit_data(request, owner, name, sha)
        if data is None:
            return not_found(request)
        return JSONResponse(data, headers={"Cache-Control": PRIVATE_CACHE})

    @router.get("/api/v1/repos/{owner}/{name}/commits/{sha}/file")
    def api_file_by_query(request: Request, owner: str, name: str, sha: str, path: str) -> Response:
        return api_file(request, owner, name, sha, path)

    @router.get("/api/v1/repos/{owner}/{name}/commits/{sha}/files/{path:path}")
    def api_file(request: Request, owner: str, name: str, sha: str, path: str) -> Response:
        data = _file_data(request, owner, name, sha, path)
        if data is None:
            return not_found(request)
        return JSONResponse(data, headers={"Cache-Control": PRIVATE_CACHE})

    # -- pages ------------------------------------------------------------------

    @router.get("/", response_class=HTMLResponse)
    def index(request: Request) -> Response:
        return page("index.html", repositories=_repositories(request))

    @router.get("/{owner}/{name}/badge.svg")
    def badge(request: Request, owner: str, name: str) -> Response:
        services = services_of(request)
        with services.sessions() as session:
            try:
                repo = readable_repo(request, session, owner, name)
            except NotVisible:
                return Response("not found", status_code=404)
            found = queries.repositories(session, {repo.id})
        coverage = next((r["coverage"] for r in found if r["name"] == repo.name), None)
        return Response(
            svg.badge(coverage),
            media_type="image/svg+xml",
            headers={"Cache-Control": "no-cache" if not repo.private else PRIVATE_CACHE},
        )

    @router.get("/{owner}/{name}", response_class=HTMLResponse)
    def repository(request: Request, owner: str, name: str, offset: int = 0) -> Response:
        services = services_of(request)
        with services.sessions() as session:
            try:
                repo = readable_repo(request, session, owner, name)
            except NotVisible:
                return not_found(request)
            data = queries.repository_commits(
                session, cache(services), repo, offset=_bounded(offset)
            )
        return page("repository.html", data=data, owner=owner, name=name)

    @router.get("/{owner}/{name}/commit/{sha}", response_class=HTMLResponse)
    def commit(request: Request, owner: str, name: str, sha: str) -> Response:
        data = _commit_data(request, owner, name, sha)
        if data is None:
            return not_found(request)
        return page("commit.html", data=data, args=dict(request.query_params))

    @router.get("/{owner}/{name}/commit/{sha}/file", response_class=HTMLResponse)
    def file_by_query(request: Request, owner: str, name: str, sha: str, path: str) -> Response:
        """The file page for paths the URL folding would change (render.file_url)."""
        return file(request, owner, name, sha, path)

    @router.get("/{owner}/{name}/commit/{sha}/file/{path:path}", response_class=HTMLResponse)
    def file(request: Request, owner: str, name: str, sha: str, path: str) -> Response:
        data = _file_data(request, owner, name, sha, path)
        if data is None:
            return not_found(request)
        return streamed_page(
            "file.html",
            data=data,
            blocks=lines.line_blocks(data["lines"]),
            args=dict(request.query_params),
        )

    def streamed_page(template: str, **values: Any) -> Response:
        """A page rendered while it is sent: a client that goes away stops
        the rendering (Starlette stops iterating at its disconnect)."""
        chunks = _batched(env.get_template(template).generate(**values))
        return StreamingResponse(
            chunks, media_type="text/html; charset=utf-8", headers={"Cache-Control": PRIVATE_CACHE}
        )

    # -- repositories with nested names (GitLab groups: group/sub/name) ------------
    # The routes above take OWNER/NAME; these take any depth, last of all.

    @router.get("/api/v1/repos/{slug:path}")
    def api_nested(request: Request, slug: str) -> Response:
        parts = slug.split("/")
        at = next((i for i in range(2, len(parts)) if parts[i] == "commits"), None)
        if at is None:
            return not_found(request)
        owner, name, rest = "/".join(parts[: at - 1]), parts[at - 1], parts[at + 1 :]
        if not rest:
            return api_commits(request, owner, name, _offset(request))
        if len(rest) == 1:
            return api_commit(request, owner, name, rest[0])
        if rest[1] == "files" and len(rest) > 2:
            return api_file(request, owner, name, rest[0], "/".join(rest[2:]))
        if rest[1] == "file" and len(rest) == 2:
            return api_file(request, owner, name, rest[0], request.query_params.get("path", ""))
        return not_found(request)

    @router.get("/{slug:path}", response_class=HTMLResponse)
    def page_nested(request: Request, slug: str) -> Response:
        parts = slug.split("/")
        if len(parts) >= 3 and parts[-1] == "badge.svg":
            return badge(request, "/".join(parts[:-2]), parts[-2])
        at = next((i for i in range(2, len(parts) - 1) if parts[i] == "commit"), None)
        if at is None:
            if len(parts) < 2 or "" in parts:
                return not_found(request)
            return repository(request, "/".join(parts[:-1]), parts[-1], _offset(request))
        owner, name, rest = "/".join(parts[: at - 1]), parts[at - 1], parts[at + 1 :]
        if len(rest) == 1:
            return commit(request, owner, name, rest[0])
        if rest[1] == "file" and len(rest) > 2:
            return file(request, owner, name, rest[0], "/".join(rest[2:]))
        if rest[1] == "file" and len(rest) == 2:
            return file(request, owner, name, rest[0], request.query_params.get("path", ""))
        return not_found(request)

    # -- shared by the page and its JSON ------------------------------------------

    def _repositories(request: Request) -> list[dict[str, Any]]:
        services = services_of(request)
        hashes = access.presented_hashes(request.headers, request.cookies)
        with services.sessions() as session:
            visible = access.readable_private_ids(session, hashes)
            return queries.repositories(session, visible)

    def _commit_data(request: Request, owner: str, name: str, sha: str) -> dict[str, Any] | None:
        services = services_of(request)
        with services.sessions() as session:
            try:
                repo, found = readable_commit(request, session, owner, name, sha)
            except NotVisible:
                return None
            data = queries.commit_page(session, cache(services), repo, found, **table_args(request))
            if data is not None:
                data["tests"] = commit_tests_data(services, session, repo, found)  # app/testresults
                # What the Git provider said (app/web/pullpages.py).
                data["pull_feedback"] = pullpages.commit_pull(session, found)
            return data

    def _file_data(
        request: Request, owner: str, name: str, sha: str, path: str
    ) -> dict[str, Any] | None:
        services = services_of(request)
        with services.sessions() as session:
            try:
                repo, found = readable_commit(request, session, owner, name, sha)
            except NotVisible:
                return None
            start = _int_arg(request, "from", 1)
            data = lines.file_page(session, cache(services), repo, found, path, start=start)
        if data is not None:  # the source at the commit, through the provider
            source = pullpages.file_source(services, repo, found, path)
            data["source"] = (
                pullpages.source_rows(source, data["lines"], data["window"]) if source else None
            )
        return data

    return router


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


def _safe_next(target: str | None) -> str:
    """Only a path on this site: never ``//host`` or a scheme (no open redirect)."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    return quote(target, safe="/-_.~%?=&")
