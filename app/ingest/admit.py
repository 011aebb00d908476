"""Admitting an upload to processing: the one door into the pipeline.

An upload created over HTTP waits (``awaiting``) until its payload arrives:
PUT to covworker (into its row, into chunk rows, or into the object store)
or PUT straight to the object store and found there (app/ingest/arrival.py,
by its chain or by the sweep). However it arrives, it enters the pipeline
the same way, in this order:

1. the single-use fence (``app.ingest.store``): one statement stores the
   payload and moves the upload out of ``awaiting``; a URL used already, or
   an upload taken by another way in, passes it no second time;
2. the upload joins its commit's processing set in Redis, so the finisher
   does not think the commit settled while it is on its way;
3. the processor is sent, in its commit's lane: the shared queue for the
   commit's first ``COVWORKER_PROCESSOR_SHARE`` uploads processing at once,
   the bulk queue for the rest (``send_in_lanes``), so a matrix of hundreds
   does not put every other commit's uploads behind its own.

Each step is committed before the next starts, so a failure after the fence
(Redis or the broker away) leaves an ``uploaded`` row that the sweep finds
and sends on (app/recovery/sweeper.py); the fence refuses it to a second
admission, so it is never sent twice by its way in.

Uploads handed over directly (``accept_uploads``: ``covworker upload``, the
demo) are created past the fence, ``uploaded`` in their own transaction, and
take steps 2 and 3 through ``enter_processing``. Re-drives are not
admissions: the sweep and the finisher send on uploads that were admitted
long ago, and the finisher moves them back to processing atomically with
its own bookkeeping, so they call the processor themselves (the sweep in
lanes too).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import IO, Protocol

from app.ingest.store import store_chunked, store_payload
from app.runtime.services import Services


class SendProcessor(Protocol):
    """Sends an upload's processor (``app.actors.send_processor``); with
    ``bulk``, on the bulk queue (``send_in_lanes``)."""

    def __call__(self, upload_id: int, /, *, bulk: bool = False) -> object: ...


def send_in_lanes(
    send_processor: SendProcessor, upload_ids: list[int], processing: int, share: int
) -> None:
    """Send the processors of uploads of one commit that just joined its
    processing set, which then held ``processing`` uploads: those within the
    commit's first ``share`` go to the shared queue, the rest to the bulk
    queue (``share`` 0: all to the shared queue).

    A worker takes the shared queue's processors before the bulk queue's
    (``app.actors``), so a commit with a backlog of its own is parsed beside
    the others, not ahead of all of them; order within a commit does not
    matter (a merge is the same in any order)."""
    first = processing - len(upload_ids)  # the commit's uploads processing before these
    for rank, upload_id in enumerate(upload_ids, start=first + 1):
        if share and rank > share:
            send_processor(upload_id, bulk=True)
        else:
            send_processor(upload_id)


@dataclass(frozen=True, slots=True)
class InRow:
    """A payload held whole in memory: stored in the upload's row."""

    body: bytes | bytearray


@dataclass(frozen=True, slots=True)
class InChunks:
    """A large payload received in full (a spooled file): stored in chunk rows
    of ``chunk_bytes``, with the fence, in one transaction."""

    source: IO[bytes]
    chunk_bytes: int


@dataclass(frozen=True, slots=True)
class InObject:
    """A payload already in the object store under ``key`` (``size`` bytes)."""

    key: str
    size: int


Payload = InRow | InChunks | InObject


def admit(
    services: Services, upload_id: int, payload: Payload, send_processor: SendProcessor
) -> tuple[int, int] | None:
    """Admit the awaiting upload ``upload_id`` with its ``payload``: through
    the fence, into the processing set, then ``send_processor(upload_id)``.

    ``(repoid, commitid)`` of the admitted upload; None if it did not await
    a payload (admitted already, processing, merged, or no such upload):
    then nothing is stored or sent. An exception after the fence (Redis or
    ``send_processor`` failing) propagates and leaves the upload ``uploaded``
    for the sweep to send on."""
    if isinstance(payload, InRow):
        stored = store_payload(services, upload_id, payload.body)
    elif isinstance(payload, InChunks):
        stored = store_chunked(services, upload_id, payload.source, payload.chunk_bytes)
    else:
        stored = store_payload(
            services, upload_id, b"", storage_path=payload.key, size=payload.size
        )
    if stored is None:
        return None
    enter_processing(services, stored[0], stored[1], [upload_id], send_processor)
    return stored


def enter_processing(
    services: Services,
    repoid: int,
    commitid: int,
    upload_ids: Iterable[int],
    send_processor: SendProcessor | None,
) -> None:
    """The steps after the fence, for uploads of one commit that passed it:
    into the processing set (one SADD), then each processor is sent in its
    lane (``send_in_lanes``; none without ``send_processor``: the caller
    drives the pipeline itself, or leaves them to the sweep). Only for
    uploads that just passed the fence (``admit``) or were created past it
    (``accept_uploads``)."""
    ids = list(upload_ids)
    processing = services.state.mark_processing(repoid, commitid, ids)
    if send_processor is not None:
        send_in_lanes(send_processor, ids, processing, services.settings.processor_share)
