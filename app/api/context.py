"""What every request handler needs, built once per server process."""

from __future__ import annotations

import asyncio
import logging
import secrets
from dataclasses import dataclass, field

from fastapi import Request
from sqlalchemy.ext.asyncio import AsyncEngine

from app.api.auth import RepositoryCache
from app.api.payload_limits import LargeBodies
from app.api.signing import UrlSigner
from app.db.engine import make_async_engine
from app.ingest.admit import SendProcessor
from app.runtime.services import Services
from app.runtime.worker import CovworkerApp
from app.settings import Settings
from app.storage import StorageUnavailable

#: PUT bodies (of one chunk) stored at once by one server process; the other
#: PUTs wait with their bodies read, so the POSTs beside them do not queue
#: behind payload work for the thread pool, the database and the CPU. A slow
#: client holds no turn while it sends; larger bodies go to chunk rows as
#: they arrive, without a turn.
PUTS_AT_ONCE = 1

logger = logging.getLogger(__name__)


@dataclass
class ApiContext:
    settings: Settings
    pipeline: CovworkerApp
    signer: UrlSigner
    repositories: RepositoryCache
    #: Queue an upload's processor (``app.actors.send_processor``).
    send_processor: SendProcessor
    #: The create-upload statement's engine on the event loop (PostgreSQL; None on SQLite).
    async_engine: AsyncEngine | None = None
    #: Turns to store a PUT body.
    puts: asyncio.Semaphore = field(default_factory=lambda: asyncio.Semaphore(PUTS_AT_ONCE))
    #: Turns to receive a large PUT body (app/api/payload_put.py); set by ``build``.
    large_bodies: LargeBodies = field(default_factory=lambda: LargeBodies(16, 4))

    @property
    def services(self) -> Services:
        return self.pipeline.services

    @classmethod
    def build(
        cls, settings: Settings, pipeline: CovworkerApp, send_processor: SendProcessor
    ) -> ApiContext:
        secret = settings.upload_url_secret or secrets.token_hex(32)
        signer = UrlSigner(secret.encode(), settings.upload_url_ttl_s)
        async_engine = make_async_engine(pipeline.services.engine)
        store = pipeline.services.payload_store
        if store is not None:  # the bucket, before a presigned URL names it
            try:
                store.ensure_bucket()
            except StorageUnavailable as exc:  # the first PUT tries again
                logger.warning("The object store is not reachable at start-up: %s", exc)
        large = LargeBodies(settings.large_bodies_at_once, settings.large_bodies_per_repository)
        return cls(
            settings,
            pipeline,
            signer,
            RepositoryCache(),
            send_processor,
            async_engine,
            large_bodies=large,
        )


async def context(request: Request) -> ApiContext:
    """FastAPI dependency: the process's ``ApiContext``. ``async`` so that
    FastAPI calls it on the event loop: a plain function dependency costs
    every request a trip to the thread pool and back."""
    ctx: ApiContext = request.app.state.ctx
    return ctx
