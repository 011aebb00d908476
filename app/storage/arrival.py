"""Presigned PUTs: learning that a payload arrived in the object store.

With ``COVWORKER_S3_PRESIGN=true`` the uploader PUTs its payload straight to
the object store, and nothing tells covworker when it is done (the
uploaders make no further call). So the create-upload that hands out the
presigned URL also sends ``payload_arrival``, which looks for the object:

- there: the upload is admitted (``app.ingest.admit``) with the object's
  key and size: the single-use fence moves it out of ``awaiting``, and the
  processor is sent, as after a PUT to covworker itself;
- not yet: it looks again later (1 s, 2 s, 4 s ... at most every 30 s),
  until the URL has expired (plus ``ARRIVAL_GRACE_S`` for clocks and a PUT
  in flight); then the upload stays ``awaiting`` like one whose uploader
  never sent its payload: outside the counts, so no commit waits for it;
- the store down: it looks again after ``STORE_DOWN_RETRY_MS`` (a delay,
  nothing lost).

A payload over ``COVWORKER_MAX_UPLOAD_BYTES`` (a presigned PUT cannot be
bounded) is taken in, and refused by the processor as too large: that
upload's error.

The chain lives in the broker. If it is lost (Redis flushed, a message
dropped), the sweep looks instead (``admit_arrived``): the object key is
derived from the upload's row (``presigned_key``), so every awaiting upload
older than the sweep's age whose URL could have been used is looked for in
the store; one whose object is there is admitted as the chain admits it
(``app.ingest.admit``), exactly once whichever gets there first.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

import sqlalchemy as sa

from app.db.models import Commit, Repository, Upload, UploadState
from app.errors import UnknownEntity
from app.ingest.admit import InObject, admit
from app.ingest.store import payload_target
from app.services import Services
from app.storage import STORE_DOWN_RETRY_MS, StorageUnavailable, object_key

logger = logging.getLogger(__name__)

#: Seconds after a presigned URL's expiry during which its object is still looked for.
ARRIVAL_GRACE_S = 60
#: Delay of the first look, after the create-upload (ms), and the longest between two.
FIRST_LOOK_MS = 1000
LONGEST_WAIT_MS = 30_000


#: The day in a presigned key is the day the URL was handed out, a moment
#: after the row was created: an upload created this close to midnight
#: (UTC) is looked for under the next day's key too.
KEY_DAY_SLACK_S = 300
#: How long after its URL expired the sweep still looks for an awaiting
#: upload's object (a sweep that did not run for a while still finds it).
SWEEP_LOOKBACK_S = 24 * 3600
#: Most awaiting uploads one sweep looks for (one HEAD request each).
SWEEP_LOOKS = 500


def presigned_key(repoid: int, repo_name: str, sha: str, upload_id: int, day: date) -> str:
    """Where a presigned PUT writes the payload (the store is its one writer)."""
    return object_key(repoid, repo_name, sha, upload_id, day)


def key_days(created_at: datetime) -> list[date]:
    """The days a presigned key of an upload created at ``created_at`` may name."""
    created = created_at.replace(tzinfo=UTC) if created_at.tzinfo is None else created_at
    created = created.astimezone(UTC)
    later = (created + timedelta(seconds=KEY_DAY_SLACK_S)).date()
    return [created.date()] + ([later] if later != created.date() else [])


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
    admitted = admit(services, upload_id, InObject(key, size), send_processor)
    return "stored" if admitted else "taken"


@dataclass(frozen=True, slots=True)
class _Awaiting:
    upload_id: int
    repoid: int
    repo_name: str
    sha: str
    created_at: datetime

    def candidate_keys(self) -> list[str]:
        return [
            presigned_key(self.repoid, self.repo_name, self.sha, self.upload_id, day)
            for day in key_days(self.created_at)
        ]


def _awaiting_since(services: Services, newest: datetime, oldest: datetime) -> Sequence[_Awaiting]:
    with services.sessions() as session:
        rows = session.execute(
            sa.select(Upload.id, Commit.repository_id, Repository.name, Commit.sha)
            .add_columns(Upload.created_at)
            .join(Commit, Commit.id == Upload.commit_id)
            .join(Repository, Repository.id == Commit.repository_id)
            .where(
                Upload.state == UploadState.AWAITING,
                Upload.created_at <= newest,
                Upload.created_at >= oldest,
            )
            .order_by(Upload.id.desc())
            .limit(SWEEP_LOOKS)
        ).all()
    return [_Awaiting(*row) for row in rows]


def admit_arrived(
    services: Services,
    *,
    now: datetime,
    older_than_s: float,
    send_processor: Callable[[int], object],
) -> list[int]:
    """The sweep's look for presigned payloads whose arrival chain was lost:
    the uploads admitted (``app.ingest.admit``).

    Looked for: uploads ``awaiting`` for longer than ``older_than_s`` (the
    chain finds an object within ``LONGEST_WAIT_MS`` of its arrival) whose
    URL expired less than ``SWEEP_LOOKBACK_S`` ago. One without an object
    stays ``awaiting``, as when the chain gives up: outside the counts, and
    deleted by the slot cap (app/api/slots.py). The store down: logged, the
    next sweep looks again."""
    settings, store = services.settings, services.payload_store
    if store is None or not settings.s3_presign:
        return []
    lifetime = settings.upload_url_ttl_s + ARRIVAL_GRACE_S + SWEEP_LOOKBACK_S
    found = _awaiting_since(
        services, now - timedelta(seconds=older_than_s), now - timedelta(seconds=lifetime)
    )
    admitted: list[int] = []
    try:
        for upload in found:
            for key in upload.candidate_keys():
                size = store.size(key)
                if size is None:
                    continue
                logger.warning(
                    "Upload %s: its payload arrived at %s but no arrival check took it "
                    "(its messages were lost); admitting it now.",
                    upload.upload_id,
                    key,
                )
                if admit(services, upload.upload_id, InObject(key, size), send_processor):
                    admitted.append(upload.upload_id)
                break
    except StorageUnavailable as exc:
        logger.warning("Sweep: cannot look for presigned payloads (%s); next sweep.", exc)
    return admitted
