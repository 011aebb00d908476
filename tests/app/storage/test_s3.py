"""The storage seam on a real S3 server (SeaweedFS): the store itself, the
presigned upload's arrival, the processor reading objects, retention."""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from datetime import date, timedelta
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa

from app.db.models import Commit, Repository, Upload, UploadState, utcnow
from app.errors import ConfigurationError
from app.ingest.store import CommitMeta, UploadMeta, add_awaiting_upload, store_payload
from app.retention import drop_expired_raw
from app.services import Services
from app.settings import Settings
from app.storage import ObjectMissing, StorageUnavailable, object_key
from app.storage.arrival import ARRIVAL_GRACE_S, FIRST_LOOK_MS, check_arrival
from app.storage.s3 import PART_BYTES, S3Store
from tests.support.pipeline import Pipeline, unit_services
from tests.support.private_services import free_port
from tests.support.seaweedfs import SeaweedS3

SHA = "a" * 40
LCOV = b"SF:a.py\nDA:1,1\nDA:2,0\nend_of_record\n"


@pytest.fixture(scope="module")
def seaweed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SeaweedS3]:
    server = SeaweedS3(tmp_path_factory.mktemp("s3"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def services(tmp_path: Path, seaweed: SeaweedS3) -> Iterator[Services]:
    overrides = {k.removeprefix("COVWORKER_").lower(): v for k, v in seaweed.env().items()}
    overrides["s3_bucket"] = f"t-{os.urandom(4).hex()}"
    services = unit_services(tmp_path, **overrides)
    _store(services).ensure_bucket()  # as the api does at start-up
    yield services
    services.close()


def _store(services: Services) -> S3Store:
    assert isinstance(services.payload_store, S3Store)
    return services.payload_store


def _awaiting(services: Services) -> tuple[int, Repository]:
    with services.sessions.begin() as session:
        repo = Repository(name="acme/calc")
        session.add(repo)
    upload_id = add_awaiting_upload(services, repo, SHA, CommitMeta(), UploadMeta(), "")
    return upload_id, repo


def test_keys_are_laid_out_like_codecovs_raw_uploads() -> None:
    key = object_key(7, "acme/calc", SHA, 42, date(2026, 12, 1))
    prefix, day, repo_hash, sha, name = key.rsplit("/", 4)
    assert (prefix, day, sha, name) == ("v4/raw", "2026-12-01", SHA, "42.txt")
    assert len(repo_hash) == 32 and repo_hash == repo_hash.upper()
    assert object_key(8, "acme/calc", SHA, 42, date(2026, 12, 1)) != key


def test_s3_storage_without_an_endpoint_is_refused_naming_the_variable() -> None:
    with pytest.raises(ConfigurationError, match="COVWORKER_S3_ENDPOINT_URL"):
        Settings(storage="s3")


def test_a_multipart_object_reads_back_whole_and_a_missing_one_is_named(
    services: Services,
) -> None:
    store = _store(services)
    body = os.urandom(2 * PART_BYTES + 123)
    store.put("v4/raw/x/big.txt", io.BytesIO(body), len(body))
    assert store.size("v4/raw/x/big.txt") == len(body)
    assert b"".join(store.get("v4/raw/x/big.txt")) == body
    store.delete(["v4/raw/x/big.txt", "v4/raw/x/never.txt"])
    assert store.size("v4/raw/x/big.txt") is None
    with pytest.raises(ObjectMissing, match=r"v4/raw/x/big\.txt"):
        b"".join(store.get("v4/raw/x/big.txt"))


def test_a_store_that_is_down_is_storage_unavailable(tmp_path: Path) -> None:
    settings = Settings(
        storage="s3", s3_endpoint_url=f"http://127.0.0.1:{free_port()}", s3_bucket="down"
    )
    store = S3Store.from_settings(settings)
    with pytest.raises(StorageUnavailable, match="not reachable"):
        store.put("k.txt", io.BytesIO(b"x"), 1)
    with pytest.raises(StorageUnavailable):
        store.size("k.txt")


def test_a_presigned_put_stores_the_object_and_a_forged_one_is_refused(
    services: Services,
) -> None:
    store = _store(services)
    url = store.presign_put("v4/raw/p/1.txt", 60)
    assert (
        httpx.put(url.replace("X-Amz-Signature=", "X-Amz-Signature=0"), content=b"x").status_code
        == 403
    )
    assert httpx.put(url, content=LCOV).status_code == 200
    assert b"".join(store.get("v4/raw/p/1.txt")) == LCOV


def test_arrival_waits_for_the_object_then_stores_and_sends_the_processor(
    services: Services,
) -> None:
    upload_id, repo = _awaiting(services)
    key = object_key(repo.id, repo.name, SHA, upload_id, date.today())
    looks: list[int] = []
    sent: list[int] = []
    expires = int(utcnow().timestamp()) + 600
    kwargs = {"look_again": looks.append, "send_processor": sent.append}
    assert check_arrival(services, upload_id, key, expires, 0, **kwargs) == "waiting"
    assert check_arrival(services, upload_id, key, expires, 3, **kwargs) == "waiting"
    assert looks == [FIRST_LOOK_MS, 8 * FIRST_LOOK_MS] and sent == []
    assert httpx.put(_store(services).presign_put(key, 60), content=LCOV).status_code == 200
    assert check_arrival(services, upload_id, key, expires, 4, **kwargs) == "stored"
    assert sent == [upload_id]
    assert check_arrival(services, upload_id, key, expires, 5, **kwargs) == "taken"
    with services.sessions() as session:
        row = session.get(Upload, upload_id)
        assert row is not None
        assert (row.state, row.storage_path, row.raw_size) == (UploadState.UPLOADED, key, len(LCOV))
    assert Pipeline(services).process(upload_id) == UploadState.PROCESSED


def test_arrival_gives_up_after_the_url_expired_and_the_upload_stays_out_of_the_counts(
    services: Services,
) -> None:
    upload_id, repo = _awaiting(services)
    key = object_key(repo.id, repo.name, SHA, upload_id, date.today())
    expires = int(utcnow().timestamp()) - ARRIVAL_GRACE_S - 1
    looks: list[int] = []
    outcome = check_arrival(
        services, upload_id, key, expires, 9, look_again=looks.append, send_processor=print
    )
    assert (outcome, looks) == ("expired", [])
    with services.sessions() as session:
        assert session.scalar(sa.select(Upload.state)) == UploadState.AWAITING


def test_an_upload_whose_object_is_missing_ends_in_error_naming_it(services: Services) -> None:
    upload_id, repo = _awaiting(services)
    key = object_key(repo.id, repo.name, SHA, upload_id, date.today())
    assert store_payload(services, upload_id, b"", storage_path=key, size=10) is not None
    assert Pipeline(services).process(upload_id) == UploadState.ERROR
    with services.sessions() as session:
        error = session.scalar(sa.select(Upload.error))
    assert error is not None and "not in the object store" in error and key in error


def test_retention_deletes_the_objects_of_old_merged_uploads(services: Services) -> None:
    upload_id, repo = _awaiting(services)
    key = object_key(repo.id, repo.name, SHA, upload_id, date.today())
    _store(services).put(key, io.BytesIO(LCOV), len(LCOV))
    assert store_payload(services, upload_id, b"", storage_path=key, size=len(LCOV))
    old = utcnow() - timedelta(days=services.settings.raw_retention_days + 1)
    with services.sessions.begin() as session:
        session.execute(sa.update(Upload).values(state=UploadState.MERGED, merged_at=old))
    assert drop_expired_raw(services) == 1
    assert _store(services).size(key) is None
    with services.sessions() as session:
        assert session.scalar(sa.select(Upload.raw_dropped_at)) is not None
        assert session.scalar(sa.select(sa.func.count()).select_from(Commit)) == 1
