"""Presigned PUTs: learning that a payload arrived in the object store.

With ``COVWORKER_S3_PRESIGN=true`` the uploader PUTs its payload straight to
the object store, and nothing tells covworker when it is done (the
uploaders make no further call). So the create-upload that hands out the
presigned URL also sends ``payload_arrival``, which looks for the object:

- there: the single-use fence moves the upload out of ``awaiting`` with the
  object's key and size, and the processor is sent, as after a PUT to
  covworker itself;
- not yet: it looks again later (1 s, 2 s, 4 s ... at most every 30 s),
  until the URL has expired (plus ``ARRIVAL_GRACE_S`` for clocks and a PUT
  in flight); then the upload stays ``awaiting`` like one whose uploader
  never sent its payload: outside the counts, so no commit waits for it;
- the store down: it looks again after ``STORE_DOWN_RETRY_MS`` (a delay,
  nothing lost).

A payload over ``COVWORKER_MAX_UPLOAD_BYTES`` (a presigned PUT cannot be
bounded) is taken in, and refused by the processor as too large: that
upload's error.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from app.errors import UnknownEntity
from app.ingest.store import payload_target, store_payload
from app.services import Services
from app.storage import STORE_DOWN_RETRY_MS, StorageUnavailable

logger = logging.getLogger(__name__)

#: Seconds after a presigned URL's expiry during which its object is still looked for.
ARRIVAL_GRACE_S = 60
#: Delay of the first look, after the create-upload (ms), and the longest between two.
FIRST_LOOK_MS = 1000
LONGEST_WAIT_MS = 30_000


def next_look_ms(attempt: int) -> int:
    return int(min(FIRST_LOOK_MS * 2**attempt, LONGEST_WAIT_MS))


def check_arrival(
    services: Services,
    upload_id: int,
    key: str,
    expires: int,
    attempt: int,
    *,
    look_again: Callable[[int], None],
    send_processor: Callable[[int], object],
    now: float | None = None,
) -> str:
    """Look for the object of a presigned upload once; what was found:
    ``stored``, ``waiting`` (``look_again(delay_ms)`` was called), ``expired``
    or ``taken`` (the upload no longer awaits a payload)."""
    target = payload_target(services, upload_id)
    if target is None:
        raise UnknownEntity(f"upload {upload_id} does not exist")
    if not target.awaiting:
        return "taken"
    store = services.payload_store
    if store is None:
        raise StorageUnavailable(
            f"upload {upload_id} waits in an object store: set COVWORKER_STORAGE=s3"
        )
    try:
        size = store.size(key)
    except StorageUnavailable as exc:
        logger.warning("Upload %s: %s; looking again later.", upload_id, exc)
        look_again(STORE_DOWN_RETRY_MS)
        return "store down"
    if size is None:
        if (now if now is not None else time.time()) < expires + ARRIVAL_GRACE_S:
            look_again(next_look_ms(attempt))
            return "waiting"
        logger.info("Upload %s: no payload arrived at %s before its URL expired.", upload_id, key)
        return "expired"
    if store_payload(services, upload_id, b"", storage_path=key, size=size) is None:
        return "taken"
    send_processor(upload_id)
    return "stored"
