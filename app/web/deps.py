"""What the pages' handlers take: FastAPI dependencies (the process's services
and settings, the URL's repository as the request may read it), the app's
report cache and the query arguments every listing reads.

``RepoRequest.open(session)`` raises :class:`NotVisible` for a repository the
request may not read; ``app.web.router.install_page_handlers`` answers it."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.orm import Session

from app.db.models import Repository
from app.runtime.services import Services
from app.settings import Settings
from app.web import access, queries, signin
from app.web.reports import ReportCache


class NotVisible(Exception):
    """Unknown, or private without the read token: the same 404 either way.

    Raised anywhere under a handler; :func:`install_page_handlers` answers it
    with the 404 page, ``{"detail": "not found"}`` under ``/api/``, or a bare
    404 where ``bare`` (the badge: an image has no page to show).
    """

    def __init__(self, *, bare: bool = False) -> None:
        super().__init__("not found")
        self.bare = bare


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


def context_services(request: Request) -> Services:
    services: Services = request.app.state.ctx.services  # app.api.context.ApiContext
    return services


#: Largest offset a listing takes (past every row; the database's integer).
MAX_OFFSET = 2**31 - 1


def bounded(offset: int) -> int:
    return min(max(0, offset), MAX_OFFSET)


def offset_arg(request: Request) -> int:
    return int_arg(request, "offset", 0)


def int_arg(request: Request, name: str, default: int) -> int:
    try:
        return bounded(int(request.query_params.get(name, str(default))[:20]))
    except ValueError:
        return default
