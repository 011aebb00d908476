"""Where test results show: a commit's tests as JSON, and a repository's
slowest and flakiest tests (page and JSON).

- ``GET /api/v1/repos/OWNER/NAME/commits/SHA/tests``: ``totals`` (passed,
  failed, errored, skipped, flaky, total), ``failures`` (name, suite,
  message, flaky, ...) and ``comment``, the pull-request comment's test
  section in Markdown; 404 when the commit has no test results.
- ``GET /-/tests/OWNER/NAME`` and ``GET /api/v1/tests/OWNER/NAME``: the
  slowest tests (mean duration) and the flakiest (fail rate), over
  ``COVWORKER_TESTRESULTS_HISTORY_DAYS``, computed at most once per
  ``COVWORKER_TESTRESULTS_SUMMARY_CACHE_S`` (:mod:`app.testresults.cached`).

The commit page shows the same totals and failures (``commit_tests_data``,
added to the commit page's data). Private repositories answer 404 without
their read token, as every page does (``app.web.access``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from sqlalchemy.orm import Session

from app.db.models import Commit, Repository
from app.runtime.services import Services
from app.testresults.cached import cached_summary
from app.testresults.comment import tests_section
from app.testresults.history import repository_tests
from app.testresults.summary import commit_tests
from app.web import access, queries, signin
from app.web.render import environment

PRIVATE_CACHE = "private, no-store"
ServicesOf = Callable[[Request], Services]


def _context_services(request: Request) -> Services:
    services: Services = request.app.state.ctx.services  # app.api.context.ApiContext
    return services


def commit_tests_data(
    services: Services, session: Session, repo: Repository, commit: Commit
) -> dict[str, Any] | None:
    """The commit's test results as the page and the JSON show them (None: none)."""
    tests = commit_tests(session, repo.id, commit.id, services.settings.testresults_flake_runs)
    return tests.as_json() if tests is not None else None


def _history_days(services: Services) -> int:
    return services.settings.testresults_history_days or 3650


def tests_pages_router(services_of: ServicesOf = _context_services) -> APIRouter:
    router = APIRouter(include_in_schema=False)
    env = environment()

    def readable(request: Request, session: Session, slug: str) -> Repository | None:
        repo = queries.find_repository(session, slug.strip("/"))
        tokens = access.presented_hashes(request.headers, request.cookies)
        if repo is None or not (access.can_read(repo, tokens) or signin.may_read(request, repo)):
            return None
        return repo

    def not_found(request: Request) -> Response:
        if request.url.path.startswith("/api/"):
            return JSONResponse({"detail": "not found"}, status_code=404)
        html = env.get_template("404.html").render(
            what="This page does not exist.", next=request.url.path
        )
        return HTMLResponse(html, status_code=404)

    @router.get("/api/v1/repos/{slug:path}/commits/{sha}/tests")
    def api_commit_tests(request: Request, slug: str, sha: str) -> Response:
        services = services_of(request)
        flake_runs = services.settings.testresults_flake_runs
        with services.sessions() as session:
            repo = readable(request, session, slug)
            commit = queries.find_commit(session, repo, sha) if repo else None
            tests = (
                commit_tests(session, repo.id, commit.id, flake_runs) if repo and commit else None
            )
        if tests is None or repo is None or commit is None:
            return not_found(request)
        body = {
            "repository": repo.name,
            "commit": commit.sha,
            **tests.as_json(),
            # the pull-request comment's test section, as it would be posted (Markdown)
            "comment": tests_section(tests),
        }
        return JSONResponse(body, headers={"Cache-Control": PRIVATE_CACHE})

    def _repository_data(request: Request, slug: str) -> dict[str, Any] | None:
        services = services_of(request)
        with services.sessions() as session:
            repo = readable(request, session, slug)
            if repo is None:
                return None
            repo_id, name = repo.id, repo.name

        def compute() -> dict[str, Any]:
            with services.sessions() as session:
                return repository_tests(
                    session,
                    repo_id,
                    _history_days(services),
                    services.settings.testresults_flake_runs,
                )

        # the same for every reader, at most once per COVWORKER_TESTRESULTS_SUMMARY_CACHE_S
        return {"repository": name, **cached_summary(services, repo_id, compute)}

    @router.get("/api/v1/tests/{slug:path}")
    def api_repository_tests(request: Request, slug: str) -> Response:
        data = _repository_data(request, slug)
        if data is None:
            return not_found(request)
        return JSONResponse(data, headers={"Cache-Control": PRIVATE_CACHE})

    @router.get("/-/tests/{slug:path}", response_class=HTMLResponse)
    def repository_tests_page(request: Request, slug: str) -> Response:
        data = _repository_data(request, slug)
        if data is None:
            return not_found(request)
        html = env.get_template("tests.html").render(data=data)
        return HTMLResponse(html, headers={"Cache-Control": PRIVATE_CACHE})

    return router
