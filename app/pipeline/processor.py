"""``upload_processor``: raw report -> intermediate report in Redis.

Idempotent, because Dramatiq delivers at least once and the sweep re-drives:
an upload already merged or in error is left alone; one already processed
whose intermediate is still in Redis only gets its finisher sent again.

Where the finisher goes: the upload leaves the commit's processing set and
the same transaction counts what is still processing there. If nothing is
(the commit's last upload in flight), the finisher is sent *ahead*, on the
finisher queue, so the commit is merged and notified at once even behind a
backlog of other commits' uploads. Otherwise it goes to the shared queue,
behind the commit's own remaining uploads, and by the time it runs they
have usually been merged by the finisher the last one sent ahead: it then
finds nothing processed and exits (a merge pass per commit, not per upload).
A big upload (``COVWORKER_FINISHER_AHEAD_MIN_BYTES``) sends it ahead always:
its merge costs as much as a pass's fixed part, so a commit of big uploads
is merged as they are parsed, not all after the last one.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import redis
import sqlalchemy as sa

from app.coverage import codec, detect_format
from app.db.engine import binary_scalars
from app.db.models import Commit, Upload, UploadState, utcnow
from app.errors import ReportError, UnknownEntity
from app.ingest.parse import payload_intermediate, report_intermediate
from app.ingest.store import read_chunks
from app.runtime.services import Services
from app.storage import StorageUnavailable, take_object
from app.testresults.store import REPORT_FORMAT, TEST_RESULTS_PAYLOAD, store_test_results

logger = logging.getLogger(__name__)

SendFinisher = Callable[[int, int], object]
_REPARSE_FROM = (UploadState.UPLOADED, UploadState.PROCESSING)
#: States a parse may finish from: also ``processed``, for an upload whose
#: intermediate Redis lost (it is re-parsed and must go back in the processed
#: set, not be dropped from every set). A merged or errored upload is final.
_FINISH_FROM = (*_REPARSE_FROM, UploadState.PROCESSED)


@dataclass(frozen=True, slots=True)
class Located:
    repoid: int
    commitid: int
    state: str


def locate(services: Services, upload_id: int) -> Located:
    with services.sessions() as session:
        row = session.execute(
            sa.select(Commit.repository_id, Upload.commit_id, Upload.state)
            .join(Commit, Commit.id == Upload.commit_id)
            .where(Upload.id == upload_id)
        ).first()
    if row is None:
        raise UnknownEntity(f"upload {upload_id} does not exist")
    return Located(row[0], row[1], row[2])


#: Longest reason stored on an upload.
MAX_REASON = 2000


def printable(text: str) -> str:
    """``text`` without the characters PostgreSQL refuses in text (NUL), and
    other control characters except tab and newline, shown escaped instead."""
    return "".join(c if c.isprintable() or c in "\t\n" else repr(c)[1:-1] for c in text)


def failure_reason(exc: BaseException) -> str:
    """The reason an upload failed, as stored on it: a ``ReportError``'s own
    message, any other exception named with its type (it came from a bug or a
    limit in a parser, not from a check that words it)."""
    if isinstance(exc, ReportError):
        text = str(exc)
    else:
        text = f"the payload could not be read ({type(exc).__name__}: {exc})"
    return printable(text[: MAX_REASON * 2])[:MAX_REASON]


def _set_state(services: Services, upload_id: int, to: str, **values: object) -> bool:
    """Move an upload to ``to`` if it is not final yet; True if it moved."""
    with services.sessions.begin() as session:
        result = session.execute(
            sa.update(Upload)
            .where(Upload.id == upload_id, Upload.state.in_(_FINISH_FROM))
            .values(state=to, updated_at=utcnow(), **values)
        )
        return bool(result.rowcount)  # type: ignore[attr-defined]


def _start_processing(services: Services, upload_id: int) -> tuple[bytes, str | None, str | None]:
    """Mark the upload processing (if it may still be parsed); read its raw
    bytes and payload format (an uploader's payload, or None: one report),
    and the key of its object if the payload is in the object store."""
    with services.sessions.begin() as session:
        session.execute(
            sa.update(Upload)
            .where(Upload.id == upload_id, Upload.state.in_(_REPARSE_FROM))
            .values(state=UploadState.PROCESSING, updated_at=utcnow())
        )
        row = session.execute(
            sa.select(Upload.payload_format, Upload.raw_size, Upload.storage_path).where(
                Upload.id == upload_id
            )
        ).first()
        if row is None:
            return b"", None, None
        payload_format, size, storage_path = row
        if storage_path:  # in the object store: read outside this transaction
            return b"", payload_format, storage_path
        [raw] = binary_scalars(session, sa.select(Upload.raw).where(Upload.id == upload_id))
        if not raw and size:  # a large HTTP payload, stored in chunks
            raw = read_chunks(session, upload_id)
        return raw or b"", payload_format, None


def _read_object(services: Services, key: str) -> bytes:
    """The payload from the object store (``take_object``). A store that is down raises
    ``StorageUnavailable`` (the message is retried: processing waits, loses
    nothing); a missing object is ``ObjectMissing``, that upload's error."""
    if services.payload_store is None:
        raise StorageUnavailable(
            f"upload payload {key} is in an object store: set COVWORKER_STORAGE=s3"
        )
    return take_object(services.payload_store, key, services.settings.max_upload_bytes)


def process_upload(
    services: Services,
    upload_id: int,
    send_finisher: SendFinisher,
    send_finisher_ahead: SendFinisher | None = None,
) -> str:
    """Parse one upload; returns the state it ended in.

    ``send_finisher_ahead`` (default ``send_finisher``) sends the finisher
    when no other upload of the commit is still processing (module docstring).
    """
    ahead = send_finisher_ahead or send_finisher
    ahead_from, size = services.settings.finisher_ahead_min_bytes, 0

    def finish(repoid: int, commitid: int, processing: int) -> None:
        # A big upload's pass pays for itself: ahead too (COVWORKER_FINISHER_AHEAD_MIN_BYTES).
        big = 0 < ahead_from <= size
        (ahead if processing == 0 or big else send_finisher)(repoid, commitid)

    where = locate(services, upload_id)
    state, repoid, commitid = services.state, where.repoid, where.commitid
    if where.state in (UploadState.MERGED, UploadState.ERROR):
        # A redelivery, or the retry of a delivery that died after committing
        # this state and before its finisher was sent: send it (again). The
        # finisher notifies if the settled state was not notified yet, and
        # leaves at once if it was.
        logger.info(
            "Upload %s is already %s; sending its commit's finisher.", upload_id, where.state
        )
        finish(repoid, commitid, state.drop_processing(repoid, commitid, upload_id))
        return where.state
    if where.state == UploadState.PROCESSED and state.has_intermediate(repoid, commitid, upload_id):
        finish(repoid, commitid, state.mark_processed(repoid, commitid, upload_id))
        return UploadState.PROCESSED

    raw, payload_format, storage_path = _start_processing(services, upload_id)
    size = len(raw)
    state.mark_processing(repoid, commitid, [upload_id])
    started, fmt = time.perf_counter(), None
    warnings: list[str] | None = None
    skipped: dict[str, Any] | None = None
    named: dict[str, object] = {}  # the uploader's file names, shown instead of the slot's
    try:
        if storage_path:
            raw = _read_object(services, storage_path)
            size = len(raw)
        # What the upload may unpack to and hold grows with what it stored.
        limits = services.limits.for_input(len(raw))
        if payload_format == TEST_RESULTS_PAYLOAD:  # JUnit: stored as runs, no coverage
            intermediate = codec.dump(store_test_results(services, upload_id, raw))
            fmt = REPORT_FORMAT
        elif payload_format:  # several files, network paths, fixes (app.ingest)
            with services.parse_budget.parsing():  # COVWORKER_PARSES_AT_ONCE
                parsed = payload_intermediate(raw, limits)
            intermediate, warnings = parsed.data, parsed.warnings or None
            skipped = parsed.skipped.to_json()
            if parsed.names:
                named["filename"] = ", ".join(parsed.names).replace("\x00", "\\x00")[:1024]
            fmt = ",".join(sorted(set(parsed.formats)))[:32]
        else:
            with services.parse_budget.parsing():
                fmt = detect_format(raw)
                parsed = report_intermediate(raw, limits, fmt)
            intermediate, warnings = parsed.data, parsed.warnings or None  # what the parser forgave
            skipped = parsed.skipped.to_json()  # and the bad records it skipped
    except (sa.exc.SQLAlchemyError, redis.RedisError, StorageUnavailable):
        raise  # the services', not the payload's: retried (test results store as they parse)
    except Exception as exc:  # whatever the bytes make a parser raise
        # Decoding and parsing touch nothing but the upload's bytes, so any
        # exception here is the payload's doing (RecursionError from deep
        # nesting, ValueError from a 5,000-digit number, ...): retrying it
        # would fail the same way for ever. It ends this upload, once.
        services.metrics.upload_parsed(fmt, exc, time.perf_counter() - started)
        reason = failure_reason(exc)
        logger.warning("Upload %s of commit %s cannot be parsed: %s", upload_id, commitid, reason)
        _set_state(services, upload_id, UploadState.ERROR, error=reason)
        # The commit may be settled now, or its notified state changed.
        finish(repoid, commitid, state.drop_failed(repoid, commitid, upload_id))
        return UploadState.ERROR

    services.metrics.upload_parsed(fmt, None, time.perf_counter() - started)
    state.store_intermediate(repoid, commitid, upload_id, intermediate)
    moved = _set_state(
        services,
        upload_id,
        UploadState.PROCESSED,
        processed_at=utcnow(),
        report_format=fmt,
        warnings=[printable(w) for w in warnings] if warnings else None,
        skipped_records=skipped,
        **named,
    )
    if moved:
        processing = state.mark_processed(repoid, commitid, upload_id)
    else:  # merged or failed meanwhile (a duplicate delivery got there first)
        processing = state.drop_processing(repoid, commitid, upload_id)
    finish(repoid, commitid, processing)
    return UploadState.PROCESSED
