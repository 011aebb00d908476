"""``S3Store``: errors mapped to what covworker does with them (without a
server), then on a real S3 server (SeaweedFS): objects whole or not at all,
presigned PUTs, the processor reading objects, retention deleting them."""

from __future__ import annotations

import io
import os
from datetime import date, timedelta
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
import sqlalchemy as sa
import urllib3
from minio.deleteobjects import DeleteError
from minio.error import S3Error, ServerError

from app.db.models import Commit, Upload, UploadState, utcnow
from app.errors import ConfigurationError, ReportTooLarge
from app.ingest.store import store_payload
from app.recovery.retention import drop_expired_raw
from app.runtime.services import Services
from app.settings import Settings
from app.storage import ObjectMissing, StorageUnavailable, object_key, take_object, taken_key
from app.storage.s3 import PART_BYTES, S3Store
from tests.app.storage.conftest import LCOV, SHA, awaiting_upload, s3_store
from tests.support.pipeline import Pipeline
from tests.support.private_services import free_port


def s3_error(code: str) -> S3Error:
    return S3Error(None, code, f"{code} happened", "/b/k", "req", "host")  # type: ignore[arg-type]


class FakeMinio:
    """The calls S3Store makes of a Minio client, answering as told."""

    def __init__(self, *, exists: bool = True, fail: Exception | None = None) -> None:
        self.exists, self.fail = exists, fail
        self.calls: list[tuple[str, object]] = []
        self.delete_errors: list[DeleteError] = []

    def _call(self, name: str, arg: object) -> None:
        self.calls.append((name, arg))
        if self.fail is not None:
            raise self.fail

    def bucket_exists(self, bucket: str) -> bool:
        self._call("bucket_exists", bucket)
        return self.exists

    def make_bucket(self, bucket: str) -> None:
        self.calls.append(("make_bucket", bucket))
        if self.make_bucket_error is not None:
            raise self.make_bucket_error

    make_bucket_error: Exception | None = None

    def get_object(self, bucket: str, key: str) -> object:
        self._call("get_object", key)
        raise AssertionError("told to fail")

    def stat_object(self, bucket: str, key: str) -> object:
        self._call("stat_object", key)
        return type("Stat", (), {"size": 123})()

    def remove_objects(self, bucket: str, batch: object) -> list[DeleteError]:
        self._call("remove_objects", [d.name for d in batch])  # type: ignore[attr-defined]
        return self.delete_errors


def fake_store(client: FakeMinio) -> S3Store:
    return S3Store(client, "payloads")  # type: ignore[arg-type]


@pytest.mark.parametrize("code", ["NoSuchKey", "NoSuchObject"])
def test_a_missing_object_has_no_size_and_reading_it_names_bucket_and_key(code: str) -> None:
    store = fake_store(FakeMinio(fail=s3_error(code)))
    assert store.size("v4/raw/k.txt") is None
    with pytest.raises(ObjectMissing, match=r"bucket payloads, key v4/raw/k\.txt"):
        b"".join(store.get("v4/raw/k.txt"))


@pytest.mark.parametrize(
    ("failure", "message"),
    [
        (s3_error("AccessDenied"), "the object store refused v4/raw/k.txt: AccessDenied"),
        (ServerError("bad gateway", 502), "the object store is not reachable: bad gateway"),
        (urllib3.exceptions.MaxRetryError(None, "/k", "refused"), "not reachable"),  # type: ignore[arg-type]
        (ConnectionResetError("reset"), "not reachable: reset"),
    ],
)
def test_a_refusal_or_a_store_that_does_not_answer_is_storage_unavailable(
    failure: Exception, message: str
) -> None:
    store = fake_store(FakeMinio(fail=failure))
    with pytest.raises(StorageUnavailable, match=message):
        store.size("v4/raw/k.txt")


def test_the_bucket_is_checked_once_and_made_if_missing_even_by_a_racing_process() -> None:
    client = FakeMinio(exists=False)
    store = fake_store(client)
    store.ensure_bucket()
    store.ensure_bucket()
    assert client.calls == [("bucket_exists", "payloads"), ("make_bucket", "payloads")]
    raced = FakeMinio(exists=False)
    raced.make_bucket_error = s3_error("BucketAlreadyOwnedByYou")
    fake_store(raced).ensure_bucket()  # another process made it meanwhile: fine
    refused = FakeMinio(exists=False)
    refused.make_bucket_error = s3_error("AccessDenied")
    with pytest.raises(StorageUnavailable, match="AccessDenied"):
        fake_store(refused).ensure_bucket()


def test_deleting_nothing_calls_nothing_and_a_missing_object_is_not_an_error() -> None:
    client = FakeMinio()
    store = fake_store(client)
    store.delete([])
    assert client.calls == []
    client.delete_errors = [DeleteError("NoSuchKey", "gone", "a.txt", None)]
    store.delete(iter(["a.txt", "b.txt"]))
    assert client.calls == [("remove_objects", ["a.txt", "b.txt"])]
    client.delete_errors = [DeleteError("AccessDenied", "no", "b.txt", None)]
    with pytest.raises(StorageUnavailable, match=r"could not delete b\.txt: no"):
        store.delete(["b.txt"])


def test_the_client_follows_the_endpoint_scheme_and_the_settings_bucket() -> None:
    for url, secure in (("https://s3.example:9000", True), ("http://127.0.0.1:8333", False)):
        settings = Settings(
            storage="s3", s3_endpoint_url=url, s3_bucket="cov", s3_secret_access_key="k"
        )
        store = S3Store.from_settings(settings)
        assert store.bucket == "cov"
        assert store.client._base_url.is_https is secure  # type: ignore[attr-defined]
        assert store.client._base_url.host == urlsplit(url).netloc  # type: ignore[attr-defined]


def test_keys_are_laid_out_like_codecovs_raw_uploads() -> None:
    key = object_key(7, "acme/calc", SHA, 42, date(2026, 12, 1), secret="s")
    prefix, day, repo_hash, sha, name = key.rsplit("/", 4)
    assert (prefix, day, sha, name) == ("v4/raw", "2026-12-01", SHA, "42.txt")
    assert len(repo_hash) == 32 and repo_hash == repo_hash.upper()
    assert object_key(8, "acme/calc", SHA, 42, date(2026, 12, 1), secret="s") != key


def test_a_repositorys_keys_cannot_be_derived_from_its_name_without_the_secret() -> None:
    import hashlib

    key = object_key(7, "acme/calc", SHA, 42, date(2026, 12, 1), secret="server-secret")
    part = key.split("/")[3]
    guesses = {
        hashlib.md5(b"7:acme/calc", usedforsecurity=False).hexdigest().upper(),
        hashlib.sha256(b"7:acme/calc").hexdigest()[:32].upper(),
        object_key(7, "acme/calc", SHA, 42, date(2026, 12, 1), secret="").split("/")[3],
    }
    assert part not in guesses
    assert object_key(7, "acme/calc", SHA, 42, date(2026, 12, 1), secret="other") != key


def test_s3_storage_needs_a_secret_to_derive_its_keys_from() -> None:
    url = "http://127.0.0.1:8333"
    with pytest.raises(ConfigurationError, match="COVWORKER_S3_SECRET_ACCESS_KEY or"):
        Settings(storage="s3", s3_endpoint_url=url)
    by_store = Settings(
        storage="s3", s3_endpoint_url=url, s3_secret_access_key="a", upload_url_secret="b"
    )
    assert by_store.object_key_secret == "a"  # every process reaching the store holds it
    assert (
        Settings(storage="s3", s3_endpoint_url=url, upload_url_secret="b").object_key_secret == "b"
    )


def test_s3_storage_without_an_endpoint_is_refused_naming_the_variable() -> None:
    with pytest.raises(ConfigurationError, match="COVWORKER_S3_ENDPOINT_URL"):
        Settings(storage="s3")


def test_a_multipart_object_reads_back_whole_and_a_missing_one_is_named(
    services: Services,
) -> None:
    store = s3_store(services)
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
        storage="s3",
        s3_endpoint_url=f"http://127.0.0.1:{free_port()}",
        s3_bucket="down",
        upload_url_secret="k",
    )
    store = S3Store.from_settings(settings)
    with pytest.raises(StorageUnavailable, match="not reachable"):
        store.put("k.txt", io.BytesIO(b"x"), 1)
    with pytest.raises(StorageUnavailable):
        store.size("k.txt")


def test_a_presigned_put_stores_the_object_and_a_forged_one_is_refused(
    services: Services,
) -> None:
    store = s3_store(services)
    url = store.presign_put("v4/raw/p/1.txt", 60)
    assert (
        httpx.put(url.replace("X-Amz-Signature=", "X-Amz-Signature=0"), content=b"x").status_code
        == 403
    )
    assert httpx.put(url, content=LCOV).status_code == 200
    assert b"".join(store.get("v4/raw/p/1.txt")) == LCOV


def test_an_upload_whose_object_is_missing_ends_in_error_naming_it(services: Services) -> None:
    upload_id, repo = awaiting_upload(services)
    key = object_key(
        repo.id, repo.name, SHA, upload_id, date.today(), secret=services.settings.object_key_secret
    )
    assert store_payload(services, upload_id, b"", storage_path=key, size=10) is not None
    assert Pipeline(services).process(upload_id) == UploadState.ERROR
    with services.sessions() as session:
        error = session.scalar(sa.select(Upload.error))
    assert error is not None and "not in the object store" in error and key in error


def test_retention_deletes_the_objects_of_old_merged_uploads(services: Services) -> None:
    upload_id, repo = awaiting_upload(services)
    key = object_key(
        repo.id, repo.name, SHA, upload_id, date.today(), secret=services.settings.object_key_secret
    )
    s3_store(services).put(key, io.BytesIO(LCOV), len(LCOV))
    assert store_payload(services, upload_id, b"", storage_path=key, size=len(LCOV))
    old = utcnow() - timedelta(days=services.settings.raw_retention_days + 1)
    with services.sessions.begin() as session:
        session.execute(sa.update(Upload).values(state=UploadState.MERGED, merged_at=old))
    assert drop_expired_raw(services) == 1
    assert s3_store(services).size(key) is None
    with services.sessions() as session:
        assert session.scalar(sa.select(Upload.raw_dropped_at)) is not None
        assert session.scalar(sa.select(sa.func.count()).select_from(Commit)) == 1


def test_the_processor_takes_an_object_out_of_its_urls_reach_and_never_reads_one_too_large(
    services: Services,
) -> None:
    store = s3_store(services)
    store.put("v4/raw/t/1.txt", io.BytesIO(LCOV), len(LCOV))
    assert take_object(store, "v4/raw/t/1.txt", 1000) == LCOV
    store.put("v4/raw/t/1.txt", io.BytesIO(b"replaced"), 8)  # the URL used again
    assert take_object(store, "v4/raw/t/1.txt", 1000) == LCOV  # a redelivery: what was taken
    store.put("v4/raw/t/2.txt", io.BytesIO(b"x" * 1001), 1001)
    with pytest.raises(ReportTooLarge, match="1001 bytes, over the limit of 1000 bytes"):
        take_object(store, "v4/raw/t/2.txt", 1000)
    assert store.size("v4/raw/t/2.txt") is None and store.size(taken_key("v4/raw/t/2.txt")) is None
    with pytest.raises(ObjectMissing, match=r"v4/raw/t/3\.txt"):
        take_object(store, "v4/raw/t/3.txt", 1000)


def test_retention_deletes_the_objects_of_old_failed_uploads_and_what_was_taken(
    services: Services,
) -> None:
    upload_id, repo = awaiting_upload(services)
    key = object_key(
        repo.id, repo.name, SHA, upload_id, date.today(), secret=services.settings.object_key_secret
    )
    s3_store(services).put(key, io.BytesIO(b"not a report"), 12)
    assert store_payload(services, upload_id, b"", storage_path=key, size=12)
    assert Pipeline(services).process(upload_id) == UploadState.ERROR
    s3_store(services).put(key, io.BytesIO(b"again"), 5)  # a PUT after processing
    old = utcnow() - timedelta(days=services.settings.raw_retention_days + 1)
    assert drop_expired_raw(services) == 0  # young: kept to be examined
    with services.sessions.begin() as session:
        session.execute(sa.update(Upload).values(updated_at=old))
    assert drop_expired_raw(services) == 1
    assert s3_store(services).size(key) is None and s3_store(services).size(taken_key(key)) is None
