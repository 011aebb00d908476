"""``PayloadStore`` on an S3-compatible server, with the MinIO Python client.

Why ``minio`` (docs/object-storage.md has the comparison): it is the
client Codecov itself uses for S3, MinIO and GCS; it is small (pure Python
on urllib3, no botocore's 10+ MB of service models); its ``put_object``
streams a known-length body as a multipart upload of ``part_size`` parts
and aborts the multipart upload when a part fails, so an object exists
whole or not at all; and presigning is a local computation. It is
synchronous: covworker calls it from the api's thread pool and from worker
threads, which is where the database calls run too.

Network failures and server errors become ``StorageUnavailable``; a
missing object ``ObjectMissing``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import IO, TYPE_CHECKING, BinaryIO, cast
from urllib.parse import urlsplit

import urllib3
from minio import Minio
from minio.commonconfig import CopySource
from minio.deleteobjects import DeleteObject
from minio.error import InvalidResponseError, S3Error, ServerError

from app.storage import ObjectMissing, StorageUnavailable

if TYPE_CHECKING:
    from app.settings import Settings

#: Parts of a multipart upload: the most of a payload held in memory at once
#: (one part, sent by one thread). S3's minimum part is 5 MiB; on SeaweedFS a
#: 100 MB payload took 4.8 s in 8 MiB parts, 3.1 s in 16 MiB, 2.7 s in 32 MiB.
PART_BYTES = 16 * 1024 * 1024
#: Chunks a payload is read back in.
READ_CHUNK = 1024 * 1024
_MISSING = frozenset({"NoSuchKey", "NoSuchObject"})


class S3Store:
    """Objects in one bucket, created on first use if missing."""

    def __init__(self, client: Minio, bucket: str) -> None:
        self.client, self.bucket = client, bucket
        self._bucket_checked = False

    @classmethod
    def from_settings(cls, settings: Settings) -> S3Store:
        url = urlsplit(settings.s3_endpoint_url)
        http = urllib3.PoolManager(
            maxsize=16,
            timeout=urllib3.Timeout(connect=5.0, read=60.0),
            # A store that is down is told at once (503 to the uploader, a
            # Dramatiq retry in a worker); a dropped connection is retried twice.
            retries=urllib3.Retry(total=2, connect=1, backoff_factor=0.2, status_forcelist=()),
        )
        client = Minio(
            url.netloc,
            access_key=settings.s3_access_key_id or None,
            secret_key=settings.s3_secret_access_key or None,
            secure=url.scheme == "https",
            region=settings.s3_region or None,
            http_client=http,
        )
        return cls(client, settings.s3_bucket)

    @contextmanager
    def _calls(self, key: str) -> Iterator[None]:
        try:
            yield
        except S3Error as exc:
            if exc.code in _MISSING:
                raise ObjectMissing(
                    f"the payload is not in the object store (bucket {self.bucket}, key {key})"
                ) from None
            raise StorageUnavailable(f"the object store refused {key}: {exc.code} {exc}") from exc
        except (ServerError, InvalidResponseError, urllib3.exceptions.HTTPError, OSError) as exc:
            raise StorageUnavailable(f"the object store is not reachable: {exc}") from exc

    def ensure_bucket(self) -> None:
        if self._bucket_checked:
            return
        with self._calls(self.bucket):
            if not self.client.bucket_exists(self.bucket):
                try:
                    self.client.make_bucket(self.bucket)
                except S3Error as exc:  # another process made it meanwhile
                    if exc.code not in ("BucketAlreadyOwnedByYou", "BucketAlreadyExists"):
                        raise
        self._bucket_checked = True

    def put(self, key: str, stream: IO[bytes], size: int) -> None:
        self.ensure_bucket()
        with self._calls(key):
            self.client.put_object(
                self.bucket,
                key,
                cast(BinaryIO, stream),
                size,
                content_type="text/plain",
                part_size=PART_BYTES,
                num_parallel_uploads=1,
            )

    def get(self, key: str) -> Iterator[bytes]:
        with self._calls(key):
            response = self.client.get_object(self.bucket, key)
            try:
                # the bytes as stored: a legacy uploader's gzip body (sent with
                # Content-Encoding: gzip to a presigned URL) stays gzip, as in the database
                yield from response.stream(READ_CHUNK, decode_content=False)
            finally:
                response.close()
                response.release_conn()

    def size(self, key: str) -> int | None:
        try:
            with self._calls(key):
                return self.client.stat_object(self.bucket, key).size
        except ObjectMissing:
            return None

    def delete(self, keys: Iterable[str]) -> None:
        names = list(keys)
        if not names:
            return
        with self._calls(", ".join(names[:3])):
            batch = (DeleteObject(name) for name in names)
            for error in self.client.remove_objects(self.bucket, batch):
                if error.code not in _MISSING:
                    raise StorageUnavailable(f"could not delete {error.name}: {error.message}")

    def copy(self, source: str, target: str) -> None:
        with self._calls(source):
            self.client.copy_object(self.bucket, target, CopySource(self.bucket, source))

    def presign_put(self, key: str, expires_s: int) -> str:
        self.ensure_bucket()
        with self._calls(key):
            return self.client.presigned_put_object(
                self.bucket, key, expires=timedelta(seconds=expires_s)
            )
