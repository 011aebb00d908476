"""Where raw upload payloads live: the database (the default) or an
S3-compatible object store (``COVWORKER_STORAGE=s3``).

The seam is ``PayloadStore``, one small interface: put a stream, get a
stream, delete, presign a PUT. ``build_store`` returns None for database
storage: the payload then goes into the upload row (``raw``) or its chunk
rows (``upload_chunks``), in the transaction that moves the upload out of
``awaiting`` (app/ingest/store.py). With an object store the payload is
written first, as a whole object, and the same single statement then moves
the upload and records the object's key (``uploads.storage_path``): an
upload is never ``uploaded`` without its object, and an object whose
upload was taken meanwhile is deleted.

Keys are laid out like Codecov's raw uploads:
``v4/raw/{YYYY-MM-DD}/{repo_hash}/{commit_sha}/{upload_id}.txt``, with
``repo_hash`` an HMAC-SHA256 of the repository's id and name keyed by a
server secret (``Settings.object_key_secret``: the object store's secret
key, else ``COVWORKER_UPLOAD_URL_SECRET``), 32 uppercase hex digits. Upload
ids count up and commit SHAs are public, so the secret is what keeps one
repository's keys from being derived by anyone who knows its name; a read
of the bucket still needs the store's credentials. Changing the secret
moves only where new objects go: a stored upload keeps its key in its row
(``uploads.storage_path``).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable, Iterator
from datetime import date
from typing import IO, TYPE_CHECKING, Protocol

from app.errors import ConfigurationError, CovworkerError, ReportError, ReportTooLarge

if TYPE_CHECKING:
    from app.settings import Settings

__all__ = [
    "STORE_DOWN_RETRY_MS",
    "ObjectMissing",
    "PayloadStore",
    "StorageUnavailable",
    "build_store",
    "object_key",
    "read_object",
    "take_object",
    "taken_key",
]


#: Delay before a worker tries again a message that found the object store
#: down (ms). Outside Dramatiq's retries, which a store down for longer than
#: their backoff would exhaust: a payload waits for its store, however long.
STORE_DOWN_RETRY_MS = 5000


class StorageUnavailable(CovworkerError):
    """The object store did not answer, or answered with a server error: the
    api refuses the PUT with 503 (nothing is kept), a worker sends the
    message again after ``STORE_DOWN_RETRY_MS``."""


class ObjectMissing(ReportError):
    """An upload's payload is not in the object store (never arrived, or was
    deleted): that upload ends ``error`` with this message."""


class PayloadStore(Protocol):
    """An object store of raw payloads."""

    def ensure_bucket(self) -> None:
        """Create the bucket if it is missing (at an api's start, before a
        presigned URL names it)."""

    def put(self, key: str, stream: IO[bytes], size: int) -> None:
        """Store ``size`` bytes read from ``stream`` as one object: it exists
        whole or not at all (a large one is sent in parts, a few MiB held)."""

    def get(self, key: str) -> Iterator[bytes]:
        """The object's bytes, in chunks; ``ObjectMissing`` if it is not there."""

    def size(self, key: str) -> int | None:
        """The object's size, or None if it is not there."""

    def delete(self, keys: Iterable[str]) -> None:
        """Delete these objects (a missing one is not an error)."""

    def presign_put(self, key: str, expires_s: int) -> str:
        """A URL that PUTs the object without credentials until it expires."""

    def copy(self, source: str, target: str) -> None:
        """Copy the object ``source`` to ``target``, in the store."""


def repo_hash(repoid: int, repo_name: str, secret: str) -> str:
    """The repository's part of its object keys: not derivable without ``secret``."""
    digest = hmac.new(secret.encode(), f"{repoid}:{repo_name}".encode(), hashlib.sha256)
    return digest.hexdigest()[:32].upper()


def object_key(
    repoid: int,
    repo_name: str,
    sha: str,
    upload_id: int,
    day: date,
    attempt: str = "",
    *,
    secret: str,
) -> str:
    """Where an upload's raw payload goes (Codecov's ``v4/raw`` layout).

    ``attempt`` tells apart concurrent PUTs of one URL (``{upload_id}.{attempt}.txt``):
    each writes its own object, the fence takes one, the others delete theirs.
    A presigned upload has one writer, the store itself: ``{upload_id}.txt``.
    ``secret``: ``Settings.object_key_secret``."""
    name = f"{upload_id}.{attempt}" if attempt else str(upload_id)
    return f"v4/raw/{day.isoformat()}/{repo_hash(repoid, repo_name, secret)}/{sha}/{name}.txt"


def read_object(store: PayloadStore, key: str, limit: int) -> bytes:
    """The whole object (the parsers take bytes), refused past ``limit`` bytes."""
    chunks, size = [], 0
    for chunk in store.get(key):
        size += len(chunk)
        if size > limit:
            raise ReportTooLarge(f"the payload {key} is over the limit of {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


#: What an object is copied to before the processor reads it (``take_object``).
TAKEN_SUFFIX = ".taken"


def taken_key(key: str) -> str:
    return key + TAKEN_SUFFIX


def take_object(store: PayloadStore, key: str, limit: int) -> bytes:
    """The payload of the upload whose object is ``key``, taken out of reach
    of its URL before it is read.

    A presigned URL can be used again until it expires, and the store
    cannot bound what a PUT to it sends. So the object's size is looked up
    first: over ``limit`` it is deleted and the upload fails saying so,
    never read. Else it is copied to ``taken_key(key)`` and the original
    deleted; the copy is what is parsed, and what a redelivered message
    parses again, whatever a later PUT to the URL writes (retention deletes
    both keys)."""
    taken = taken_key(key)
    if store.size(taken) is None:
        size = store.size(key)
        if size is None:
            raise ObjectMissing(f"the payload is not in the object store (key {key})")
        if size > limit:
            store.delete([key])
            raise ReportTooLarge(
                f"the payload is {size} bytes, over the limit of {limit} bytes "
                "(COVWORKER_MAX_UPLOAD_BYTES); its object was deleted unread"
            )
        store.copy(key, taken)
        store.delete([key])
    return read_object(store, taken, limit)


def build_store(settings: Settings) -> PayloadStore | None:
    """The configured object store, or None: payloads stay in the database."""
    if settings.storage != "s3":
        return None
    try:
        from app.storage.s3 import S3Store
    except ImportError as exc:
        raise ConfigurationError(
            f"COVWORKER_STORAGE=s3 needs the S3 client: pip install 'covworker[scale]' ({exc})"
        ) from None
    return S3Store.from_settings(settings)
