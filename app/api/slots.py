"""Upload slots awaiting their PUT: a few per commit, and none forever.

A create-upload call makes a row that waits for its payload at a signed
URL. A client that never PUTs (or one making slots on purpose) would leave
such rows forever, and every commit page would list them. So a commit has
at most ``COVWORKER_MAX_AWAITING_UPLOADS`` slots whose URL may still be
used; one more is refused 429. Slots older than twice the URL's lifetime
(``COVWORKER_UPLOAD_URL_TTL_S``: their URL expired, and a PUT that began
before then has had as long again to finish) can never get a payload: they
are deleted when the cap is reached, before counting again. Nothing is
lost: an awaiting row holds no payload.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.concurrency import run_in_threadpool

from app.api.errors import ApiError
from app.db.models import Commit, Repository, Upload, UploadState, utcnow
from app.runtime.services import Services


def _awaiting(repo: Repository, sha: str) -> sa.Select[Any]:
    return (
        sa.select(sa.func.count())
        .select_from(Upload)
        .join(Commit, Commit.id == Upload.commit_id)
        .where(
            Commit.repository_id == repo.id,
            Commit.sha == sha,
            Upload.state == UploadState.AWAITING,
        )
    )


def _expire(repo: Repository, sha: str, before: datetime) -> sa.Delete:
    commit = sa.select(Commit.id).where(Commit.repository_id == repo.id, Commit.sha == sha)
    return sa.delete(Upload).where(
        Upload.commit_id.in_(commit.scalar_subquery()),
        Upload.state == UploadState.AWAITING,
        Upload.created_at < before,
    )


def _refusal(cap: int, sha: str) -> ApiError:
    return ApiError(
        429,
        f"commit {sha} has {cap} uploads waiting for their payload "
        "(COVWORKER_MAX_AWAITING_UPLOADS): PUT those first, or wait for their URLs to expire",
    )


def check_slots_sync(services: Services, repo: Repository, sha: str) -> None:
    """Refuse one slot more than the cap (in a thread: it reads the database)."""
    settings = services.settings
    cap, expired = settings.max_awaiting_uploads, _expired_before(settings.upload_url_ttl_s)
    with services.sessions.begin() as session:
        if (session.scalar(_awaiting(repo, sha)) or 0) < cap:
            return
        session.execute(_expire(repo, sha, expired))
        if (session.scalar(_awaiting(repo, sha)) or 0) >= cap:
            raise _refusal(cap, sha)


async def check_slots(
    services: Services, engine: AsyncEngine | None, repo: Repository, sha: str
) -> None:
    """``check_slots_sync`` on the event loop (PostgreSQL's asyncio engine)."""
    if engine is None:
        await run_in_threadpool(check_slots_sync, services, repo, sha)
        return
    settings = services.settings
    cap, expired = settings.max_awaiting_uploads, _expired_before(settings.upload_url_ttl_s)
    async with engine.connect() as conn:  # autocommit (make_async_engine)
        if (await conn.scalar(_awaiting(repo, sha)) or 0) < cap:
            return
        await conn.execute(_expire(repo, sha, expired))
        if (await conn.scalar(_awaiting(repo, sha)) or 0) >= cap:
            raise _refusal(cap, sha)


def _expired_before(ttl_s: int) -> datetime:
    return utcnow() - timedelta(seconds=2 * ttl_s)
