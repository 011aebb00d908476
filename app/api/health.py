"""``GET /healthz``: 200 when the database and Redis (and RabbitMQ, if it is the
broker) answer, else 503."""

from __future__ import annotations

from typing import Annotated

import sqlalchemy as sa
from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse

from app.api.context import ApiContext, context
from app.runtime.brokers import queue_inspector

router = APIRouter()


def _check(ctx: ApiContext) -> dict[str, str]:
    checks = {}
    try:
        with ctx.services.engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
        checks["database"] = "ok"
    except Exception as exc:
        checks["database"] = f"error: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
    try:
        ctx.services.redis.ping()
        checks["redis"] = "ok"
    except Exception as exc:
        checks["redis"] = f"error: {type(exc).__name__}: {str(exc)[:200]}"
    settings = ctx.services.settings
    if settings.broker_kind == "rabbitmq":  # uploads are queued there (app/runtime/brokers.py)
        try:
            queue_inspector(settings, None).queue_state(settings.queue_name)
            checks["broker"] = "ok"
        except Exception as exc:
            checks["broker"] = f"error: {type(exc).__name__}: {str(exc)[:200]}"
    return checks


@router.get("/healthz")
def healthz(ctx: Annotated[ApiContext, Depends(context)]) -> JSONResponse:
    checks = _check(ctx)
    healthy = all(v == "ok" for v in checks.values())
    return JSONResponse(
        {"status": "ok" if healthy else "unavailable", **checks},
        status_code=200 if healthy else 503,
    )
