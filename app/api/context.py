"""What every request handler needs, built once per server process."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from fastapi import Request

from app.api.auth import RepositoryCache
from app.api.signing import UrlSigner
from app.services import Services
from app.settings import Settings
from app.worker import CovworkerApp


@dataclass
class ApiContext:
    settings: Settings
    pipeline: CovworkerApp
    signer: UrlSigner
    repositories: RepositoryCache

    @property
    def services(self) -> Services:
        return self.pipeline.services

    @classmethod
    def build(cls, settings: Settings, pipeline: CovworkerApp) -> ApiContext:
        secret = settings.upload_url_secret or secrets.token_hex(32)
        signer = UrlSigner(secret.encode(), settings.upload_url_ttl_s)
        return cls(settings, pipeline, signer, RepositoryCache())


async def context(request: Request) -> ApiContext:
    """FastAPI dependency: the process's ``ApiContext``. ``async`` so that
    FastAPI calls it on the event loop: a plain function dependency costs
    every request a trip to the thread pool and back."""
    ctx: ApiContext = request.app.state.ctx
    return ctx
