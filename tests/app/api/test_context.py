"""What every request handler needs, built once per server process from the settings."""

from __future__ import annotations

import asyncio
import logging

import pytest
from fastapi import FastAPI, Request

from app.api.context import ApiContext, context
from app.api.signing import UrlSigner
from app.embedded import EmbeddedRuntime
from app.storage import StorageUnavailable


def build(runtime: EmbeddedRuntime, **settings: object) -> ApiContext:
    changed = runtime.app.settings.model_copy(update=settings)
    return ApiContext.build(changed, runtime.app, lambda upload_id: None)


def test_a_context_is_built_from_the_settings(runtime: EmbeddedRuntime) -> None:
    ctx = build(
        runtime,
        upload_url_secret="k",
        upload_url_ttl_s=90,
        large_bodies_at_once=5,
        large_bodies_per_repository=2,
    )
    expires, signature = UrlSigner(b"k", 90).sign(7, now=1000)
    assert ctx.signer.sign(7, now=1000) == (expires, signature) and expires == 1090
    assert (ctx.large_bodies.at_once, ctx.large_bodies.per_repository) == (5, 2)
    assert ctx.services is runtime.app.services
    assert ctx.async_engine is None  # SQLite: the create-upload statement runs in a thread


def test_without_a_secret_each_process_signs_with_a_random_one(runtime: EmbeddedRuntime) -> None:
    first, second = build(runtime, upload_url_secret=""), build(runtime, upload_url_secret="")
    expires, signature = first.signer.sign(7)
    assert first.signer.check(7, expires, signature) == ""
    assert second.signer.check(7, expires, signature) == "the upload URL's signature is not valid"


class UnreachableStore:
    def ensure_bucket(self) -> None:
        raise StorageUnavailable("connection refused")


def test_an_object_store_unreachable_at_start_up_is_logged_not_fatal(
    runtime: EmbeddedRuntime, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(runtime.app.services, "payload_store", UnreachableStore())
    with caplog.at_level(logging.WARNING, logger="app.api.context"):
        ctx = build(runtime)
    assert ctx.services.payload_store is not None
    assert "The object store is not reachable at start-up: connection refused" in caplog.text


def test_the_dependency_is_the_apps_context(runtime: EmbeddedRuntime) -> None:
    api = FastAPI()
    api.state.ctx = build(runtime)
    request = Request({"type": "http", "app": api, "headers": []})
    assert asyncio.run(context(request)) is api.state.ctx
