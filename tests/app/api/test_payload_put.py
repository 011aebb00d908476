"""A PUT's payload into the object store: the object stays exactly when its
upload was admitted naming it, whatever failed after the fence."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest
import redis
import sqlalchemy as sa

from app.api.context import ApiContext
from app.api.payload_put import Received, _put_object_and_admit
from app.db.models import Repository, Upload, UploadState
from app.ingest.store import CommitMeta, UploadMeta, add_awaiting_upload
from app.services import Services
from tests.support.memory_store import MemoryStore
from tests.support.pipeline import unit_services

LCOV = b"SF:a.py\nDA:1,1\nend_of_record\n"
KEY = "v4/raw/1.abcd.txt"


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    services = unit_services(tmp_path)
    services.payload_store = MemoryStore()
    yield services
    services.close()


def put(services: Services, upload_id: int, send: object) -> tuple[int, int] | None:
    """The PUT's step after its body was read: the object, then its admission."""
    received = Received()
    received.buffer, received.size = bytearray(LCOV), len(LCOV)
    ctx = cast(ApiContext, SimpleNamespace(services=services, send_processor=send))
    return _put_object_and_admit(ctx, upload_id, KEY, received)


def awaiting(services: Services) -> int:
    with services.sessions.begin() as session:
        repo = Repository(name="acme/web")
        session.add(repo)
    return add_awaiting_upload(services, repo, "a" * 40, CommitMeta(), UploadMeta(), "")


def stored(services: Services) -> dict[str, bytes]:
    assert isinstance(services.payload_store, MemoryStore)
    return services.payload_store.objects


def test_an_admitted_upload_keeps_its_object_and_a_used_url_leaves_none(
    services: Services,
) -> None:
    upload_id, sent = awaiting(services), list[int]()
    assert put(services, upload_id, sent.append) is not None
    assert stored(services) == {KEY: LCOV} and sent == [upload_id]

    stored(services).clear()
    assert put(services, upload_id, sent.append) is None  # the URL was used
    assert stored(services) == {} and sent == [upload_id]


def _redis_gone(*args: object) -> None:
    raise redis.exceptions.ConnectionError("Connection refused")


@pytest.mark.parametrize("failing", ["the processing set", "the sender"])
def test_a_failure_after_the_fence_keeps_the_object_its_upload_names(
    services: Services, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    upload_id, sent = awaiting(services), list[int]()
    if failing == "the processing set":
        monkeypatch.setattr(services.state, "mark_processing", _redis_gone)
    with pytest.raises(redis.exceptions.ConnectionError):
        put(services, upload_id, sent.append if failing != "the sender" else _redis_gone)

    with services.sessions() as session:
        row = session.execute(
            sa.select(Upload.state, Upload.storage_path).where(Upload.id == upload_id)
        ).one()
    assert tuple(row) == (UploadState.UPLOADED, KEY)  # the sweep sends it on
    assert stored(services) == {KEY: LCOV}


def test_a_failure_before_the_fence_deletes_the_object(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    upload_id = awaiting(services)

    def database_gone(*args: object, **kwargs: object) -> None:
        raise sa.exc.OperationalError("UPDATE uploads", {}, Exception("server closed"))

    monkeypatch.setattr("app.ingest.admit.store_payload", database_gone)
    with pytest.raises(sa.exc.OperationalError):
        put(services, upload_id, print)

    assert stored(services) == {}
