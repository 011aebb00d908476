"""Upload slots awaiting their PUT: at most ``COVWORKER_MAX_AWAITING_UPLOADS``
per commit, and those whose URL can no longer be used make room."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa

from app.api.errors import ApiError
from app.api.slots import check_slots, check_slots_sync
from app.db.models import Repository, Upload, UploadState, utcnow
from app.db.repos import add_repository
from app.ingest.store import CommitMeta, UploadMeta, add_awaiting_upload
from app.runtime.services import Services
from tests.support.pipeline import unit_services

CAP, TTL_S = 2, 60
SHA, OTHER = "a" * 40, "b" * 40


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    services = unit_services(tmp_path, max_awaiting_uploads=CAP, upload_url_ttl_s=TTL_S)
    yield services
    services.close()


@pytest.fixture
def repo(services: Services) -> Repository:
    with services.sessions.begin() as session:
        add_repository(session, "acme/web")
    with services.sessions() as session:
        return session.scalars(sa.select(Repository)).one()


def slot(services: Services, repo: Repository, sha: str = SHA, age_s: float = 0) -> int:
    """A new awaiting upload of ``sha``, made ``age_s`` seconds ago."""
    upload_id = add_awaiting_upload(services, repo, sha, CommitMeta(), UploadMeta(), "v1")
    with services.sessions.begin() as session:
        session.get_one(Upload, upload_id).created_at = utcnow() - timedelta(seconds=age_s)
    return upload_id


def uploads(services: Services) -> set[int]:
    with services.sessions() as session:
        return set(session.scalars(sa.select(Upload.id)))


def test_a_commit_gets_slots_up_to_the_cap_then_429_naming_it(
    services: Services, repo: Repository
) -> None:
    for _ in range(CAP):
        check_slots_sync(services, repo, SHA)
        slot(services, repo)
    with pytest.raises(ApiError) as refused:
        check_slots_sync(services, repo, SHA)
    assert refused.value.status == 429
    assert refused.value.detail.startswith(f"commit {SHA} has {CAP} uploads waiting")
    check_slots_sync(services, repo, OTHER)  # another commit has its own slots


def test_uploads_that_got_their_payload_hold_no_slot(services: Services, repo: Repository) -> None:
    ids = [slot(services, repo) for _ in range(CAP)]
    with services.sessions.begin() as session:
        session.get_one(Upload, ids[0]).state = UploadState.UPLOADED
    check_slots_sync(services, repo, SHA)


def test_at_the_cap_slots_past_twice_the_url_lifetime_are_deleted_and_make_room(
    services: Services, repo: Repository
) -> None:
    expired = slot(services, repo, age_s=2 * TTL_S + 5)
    young = slot(services, repo, age_s=2 * TTL_S - 5)  # its URL expired; a PUT may still run
    elsewhere = slot(services, repo, OTHER, age_s=2 * TTL_S + 5)
    check_slots_sync(services, repo, SHA)
    assert uploads(services) == {young, elsewhere}
    slot(services, repo)
    with pytest.raises(ApiError):
        check_slots_sync(services, repo, SHA)
    assert expired not in uploads(services)


def test_below_the_cap_nothing_is_deleted(services: Services, repo: Repository) -> None:
    old = slot(services, repo, age_s=10 * TTL_S)
    check_slots_sync(services, repo, SHA)
    assert uploads(services) == {old}


def test_check_slots_without_an_asyncio_engine_refuses_the_same(
    services: Services, repo: Repository
) -> None:
    for _ in range(CAP):
        slot(services, repo)
    with pytest.raises(ApiError) as refused:
        asyncio.run(check_slots(services, None, repo, SHA))
    assert refused.value.status == 429
    asyncio.run(check_slots(services, None, repo, OTHER))
