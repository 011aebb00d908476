"""The pages and their JSON: repositories, commits, a commit, a file, the badge.

``pages_router(settings)`` is an ``APIRouter`` for ``create_app`` to include,
and ``install_page_handlers(api)`` the answer to a repository or commit the
request may not see. One module per route group, as in ``app/api``:
:mod:`.login` (assets and sign-in), :mod:`.json_api`, :mod:`.pages` and
:mod:`.nested` (nested names); their handlers take :mod:`.deps` (the
``readable_repo`` dependency names the URL's repository and the tokens the
request presents, and its ``open(session)`` raises ``NotVisible`` for one it
may not read, answered by one exception handler). Each page and its JSON share
one data function (:mod:`.page_data`) and differ only in the renderer
(:mod:`.responses`: a Jinja template, or ``as_json``). Handlers are plain ``def``
(FastAPI runs them in its thread pool): they only read PostgreSQL, and Redis
for the operations page."""

from __future__ import annotations

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import (
    Response,
)

from app.settings import Settings
from app.web import history, json_api, nested, ops, pages, pulls, signin
from app.web.deps import NotVisible, context_services, repo_request
from app.web.login import entry_router
from app.web.responses import as_json, not_found, page


def install_page_handlers(api: FastAPI) -> None:
    """The one answer to ``NotVisible``, for every page, JSON and badge."""

    @api.exception_handler(NotVisible)
    async def _not_visible(request: Request, exc: NotVisible) -> Response:
        if exc.bare:
            return Response("not found", status_code=404)
        return not_found(request)


def pages_router(settings: Settings) -> APIRouter:
    """The pages, their JSON and the badge, in the order their paths must be
    tried: assets and sign-in, the operations page, then the repositories'
    pages (whose ``/{owner}/{name}`` matches widely), nested names last.
    ``create_app`` also calls :func:`install_page_handlers`."""
    routes = APIRouter(include_in_schema=False)
    routes.include_router(entry_router)
    signin.add_routes(routes)
    ops.add_routes(routes, settings, context_services, page)
    # Pages of their own modules, before /{owner}/{name}, given deps and responses.
    history.add_routes(routes, services_of=context_services, repo_of=repo_request, as_json=as_json)
    pulls.add_routes(
        routes, services_of=context_services, repo_of=repo_request, as_json=as_json, page=page
    )
    routes.include_router(json_api.router)
    routes.include_router(pages.router)
    routes.include_router(nested.router)  # nested names match widely: last
    return routes
