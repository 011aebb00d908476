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
derived from the upload's row (``presigned_key``); one whose object is there
is admitted as the chain admits it (``app.ingest.admit``), exactly once
whichever gets there first. The sweep looks for each awaiting upload in
order of creation, from where the last sweep stopped (a cursor in Redis),
at most ``SWEEP_LOOKS`` a sweep:

- ``early``: once it is older than the sweep's age, while its URL may still
  be used (an arrival lost early is admitted without waiting for expiry);
- ``final``: once its URL expired (plus ``ARRIVAL_GRACE_S``), the look after
  which no payload can arrive; an upload without one then is never looked
  for again.

So awaiting slots never used cost one or two looks each, and a lost arrival
waits only behind uploads created before it: newer unused slots, however
many, never push it out of a sweep's looks. Each look gets at least half of
a sweep's looks. A cursor Redis lost starts again at the oldest upload whose
URL expired less than ``SWEEP_LOOKBACK_S`` ago (more looks, none missed).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta

import sqlalchemy as sa

from app.db.models import Commit, Repository, Upload, UploadState, as_utc
from app.errors import UnknownEntity
from app.ingest.admit import InObject, SendProcessor, admit
from app.ingest.store import payload_target
from app.runtime.services import Services
from app.runtime.state import arrival_cursor_key
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
#: Most awaiting uploads one sweep looks for (one HEAD request each, two
#: near midnight: ``key_days``); each of the two looks gets at least half.
SWEEP_LOOKS = 500


def presigned_key(
    repoid: int, repo_name: str, sha: str, upload_id: int, day: date, *, secret: str
) -> str:
    """Where a presigned PUT writes the payload (the store is its one writer)."""
    return object_key(repoid, repo_name, sha, upload_id, day, secret=secret)


def key_days(created_at: datetime) -> list[date]:
    """The days a presigned key of an upload created at ``created_at`` may name."""
    created = as_utc(created_at)
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
    send_processor: SendProcessor,
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
    updated_at: datetime

    def candidate_keys(self, secret: str) -> list[str]:
        return [
            presigned_key(self.repoid, self.repo_name, self.sha, self.upload_id, day, secret=secret)
            for day in key_days(self.created_at)
        ]


def _awaiting_after(
    services: Services, after: tuple[datetime, int], newest: datetime, limit: int
) -> Sequence[_Awaiting]:
    """Awaiting uploads created after ``after`` ((time, id) of the last one
    looked for) and no later than ``newest``, oldest first. An awaiting row is
    never updated: its ``updated_at`` is its creation time, which the index
    ``ix_uploads_state_updated`` orders."""
    at, upload_id = after
    with services.sessions() as session:
        rows = session.execute(
            sa.select(Upload.id, Commit.repository_id, Repository.name, Commit.sha)
            .add_columns(Upload.created_at, Upload.updated_at)
            .join(Commit, Commit.id == Upload.commit_id)
            .join(Repository, Repository.id == Commit.repository_id)
            .where(
                Upload.state == UploadState.AWAITING,
                sa.or_(
                    Upload.updated_at > at,
                    sa.and_(Upload.updated_at == at, Upload.id > upload_id),
                ),
                Upload.updated_at <= newest,
            )
            .order_by(Upload.updated_at, Upload.id)
            .limit(limit)
        ).all()
    return [_Awaiting(*row) for row in rows]


def _cursor(services: Services, look: str, oldest: datetime) -> tuple[datetime, int]:
    """Where ``look`` got to; ``oldest`` when it has not started, or its
    cursor is older, lost or unreadable."""
    raw = services.redis.get(arrival_cursor_key(services.settings.namespace, look))
    if isinstance(raw, bytes):
        at, _, upload_id = raw.decode("ascii", "replace").partition("|")
        try:
            found = (as_utc(datetime.fromisoformat(at)), int(upload_id))
        except ValueError:
            return oldest, 0
        if found[0] >= oldest:
            return found
    return oldest, 0


def _move_cursor(services: Services, look: str, upload: _Awaiting, lookback_s: float) -> None:
    services.redis.set(
        arrival_cursor_key(services.settings.namespace, look),
        f"{as_utc(upload.updated_at).isoformat()}|{upload.upload_id}",
        ex=int(lookback_s),
    )


def _look(
    services: Services,
    look: str,
    *,
    oldest: datetime,
    newest: datetime,
    limit: int,
    lookback_s: float,
    send_processor: SendProcessor,
    admitted: list[int],
) -> int:
    """One look of the sweep (module docstring): up to ``limit`` awaiting
    uploads created from the cursor to ``newest``; how many it looked for.
    The cursor moves past each upload looked for, so a store going down
    stops it there (``StorageUnavailable`` propagates)."""
    store = services.payload_store
    assert store is not None
    found = _awaiting_after(services, _cursor(services, look, oldest), newest, limit)
    for upload in found:
        for key in upload.candidate_keys(services.settings.object_key_secret):
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
        _move_cursor(services, look, upload, lookback_s)
    return len(found)


def admit_arrived(
    services: Services,
    *,
    now: datetime,
    older_than_s: float,
    send_processor: SendProcessor,
) -> list[int]:
    """The sweep's look for presigned payloads whose arrival chain was lost:
    the uploads admitted (``app.ingest.admit``).

    Looked for (module docstring): each upload ``awaiting`` once it is older
    than ``older_than_s`` (the chain finds an object within
    ``LONGEST_WAIT_MS`` of its arrival) and once more after its URL expired,
    oldest first, at most ``SWEEP_LOOKS`` a sweep. One without an object
    stays ``awaiting``, as when the chain gives up: outside the counts, and
    deleted by the slot cap (app/api/slots.py). The store down: logged, the
    next sweep looks again from there."""
    settings, store = services.settings, services.payload_store
    if store is None or not settings.s3_presign:
        return []
    expired_s = settings.upload_url_ttl_s + ARRIVAL_GRACE_S
    final_s = max(older_than_s, expired_s)
    lookback_s = expired_s + SWEEP_LOOKBACK_S
    oldest = now - timedelta(seconds=lookback_s)
    admitted: list[int] = []
    final_from = now - timedelta(seconds=final_s)

    def look(name: str, after: datetime, until: datetime, limit: int) -> int:
        return _look(
            services,
            name,
            oldest=after,
            newest=until,
            limit=limit,
            lookback_s=lookback_s,
            send_processor=send_processor,
            admitted=admitted,
        )

    early_from = now - timedelta(seconds=older_than_s)
    try:
        if older_than_s >= final_s:  # the sweep's age is past every URL: one look
            look("final", oldest, final_from, SWEEP_LOOKS)
        else:  # each look gets half a sweep's looks, and what the other left
            looked = look("final", oldest, final_from, SWEEP_LOOKS // 2)
            looked += look("early", final_from, early_from, SWEEP_LOOKS - looked)
            if looked < SWEEP_LOOKS:
                look("final", oldest, final_from, SWEEP_LOOKS - looked)
    except StorageUnavailable as exc:
        logger.warning("Sweep: cannot look for presigned payloads (%s); next sweep.", exc)
    return admitted
