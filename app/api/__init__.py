"""``covworker serve``: HTTP ingestion speaking the Codecov uploaders' protocol.

``create_app(settings)`` builds the ASGI app; ``uvicorn --factory
app.api:create_app`` serves it with settings read from the environment.
The app is a plain FastAPI app: the health check and the upload routers
are included in ``create_app``; more routers (pages, an API for people)
are included the same way, after ``include_ingestion``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from app.api.context import ApiContext
from app.api.errors import install_error_handlers
from app.api.health import router as health_router
from app.api.limits import LimitRequestBodies, SecurityHeaders
from app.api.urls import CollapseSlashesAndPrefix
from app.db.engine import open_async_pool
from app.runtime.worker import CovworkerApp, build_app
from app.settings import Settings
from app.web.router import install_page_handlers, pages_router
from app.web.tests import tests_pages_router

__all__ = ["create_app", "include_ingestion"]


def include_ingestion(api: FastAPI) -> None:
    """The routes uploaders and providers use: the health check, every upload
    endpoint and the providers' pull-request events."""
    from app.api.cli_uploads import router as cli_router
    from app.api.legacy_uploads import router as legacy_router
    from app.api.payload_put import router as put_router
    from app.api.provider_webhooks import router as provider_webhooks_router
    from app.api.test_results import router as test_results_router

    install_error_handlers(api)
    api.include_router(health_router)
    api.include_router(cli_router)
    api.include_router(legacy_router)
    api.include_router(put_router)
    api.include_router(test_results_router)
    api.include_router(provider_webhooks_router)


def create_app(
    settings: Settings | None = None, *, covworker: CovworkerApp | None = None
) -> FastAPI:
    """The ASGI app. ``covworker`` (an already running pipeline, e.g. the
    embedded one) is used as is; otherwise one is built from ``settings``
    at start-up, in each server process, and closed at shutdown."""
    settings = settings or (covworker.settings if covworker else Settings())

    @asynccontextmanager
    async def lifespan(api: FastAPI) -> AsyncIterator[None]:
        owned = covworker is None
        pipeline = covworker or build_app(settings)
        from app import actors  # declared on the pipeline just built (its import builds none)

        api.state.ctx = ApiContext.build(settings, pipeline, actors.send_processor)
        if api.state.ctx.async_engine is not None:
            await open_async_pool(api.state.ctx.async_engine)
        try:
            yield
        finally:
            if api.state.ctx.async_engine is not None:
                await api.state.ctx.async_engine.dispose()
            if owned:
                pipeline.close()

    api = FastAPI(title="covworker", lifespan=lifespan, docs_url=None, redoc_url=None)
    api.add_middleware(CollapseSlashesAndPrefix)
    api.add_middleware(
        LimitRequestBodies,
        max_bytes=settings.max_request_body_bytes,
        provider_event_max_bytes=settings.max_provider_event_bytes,
    )
    api.add_middleware(SecurityHeaders)
    include_ingestion(api)
    # More routers (pages, ...) go here: api.include_router(...).
    api.include_router(tests_pages_router())  # before the pages: theirs match widely
    api.include_router(pages_router(settings))  # last: its /{owner}/{repo} matches widely
    install_page_handlers(api)
    return api
