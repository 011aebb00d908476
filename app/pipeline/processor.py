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

import sqlalchemy as sa

from app.coverage import detect_format, parse_report
from app.db.models import Commit, Upload, UploadState, utcnow
from app.errors import ReportError, UnknownEntity
from app.ingest.parse import parse_payload
from app.ingest.store import read_chunks
from app.services import Services

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


def _set_state(services: Services, upload_id: int, to: str, **values: object) -> bool:
    """Move an upload to ``to`` if it is not final yet; True if it moved."""
    with services.sessions.begin() as session:
        result = session.execute(
            sa.update(Upload)
            .where(Upload.id == upload_id, Upload.state.in_(_FINISH_FROM))
            .values(state=to, updated_at=utcnow(), **values)
        )
        return bool(result.rowcount)  # type: ignore[attr-defined]


def _start_processing(services: Services, upload_id: int) -> tuple[bytes, str | None]:
    """Mark the upload processing (if it may still be parsed); read its raw
    bytes and payload format (an uploader's payload, or None: one report)."""
    with services.sessions.begin() as session:
        session.execute(
            sa.update(Upload)
            .where(Upload.id == upload_id, Upload.state.in_(_REPARSE_FROM))
            .values(state=UploadState.PROCESSING, updated_at=utcnow())
        )
        row = session.execute(
            sa.select(Upload.raw, Upload.payload_format, Upload.raw_size).where(
                Upload.id == upload_id
            )
        ).first()
        if row is None:
            return b"", None
        raw, payload_format, size = row
        if not raw and size:  # a large HTTP payload, stored in chunks
            raw = read_chunks(session, upload_id)
        return raw or b"", payload_format


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
        logger.info("Upload %s is already %s; nothing to do.", upload_id, where.state)
        state.drop_processing(repoid, commitid, upload_id)
        return where.state
    if where.state == UploadState.PROCESSED and state.has_intermediate(repoid, commitid, upload_id):
        finish(repoid, commitid, state.mark_processed(repoid, commitid, upload_id))
        return UploadState.PROCESSED

    raw, payload_format = _start_processing(services, upload_id)
    size = len(raw)
    state.mark_processing(repoid, commitid, [upload_id])
    started, fmt = time.perf_counter(), None
    warnings: list[str] | None = None
    try:
        if payload_format:  # several files, network paths, fixes (app.ingest)
            parsed = parse_payload(raw, services.limits)
            report, warnings = parsed.report, parsed.warnings or None
            fmt = ",".join(sorted(set(parsed.formats)))[:32]
        else:
            fmt = detect_format(raw)
            report = parse_report(raw, limits=services.limits, fmt=fmt)
            warnings = report.warnings or None  # what the parser forgave
    except ReportError as exc:
        services.metrics.upload_parsed(fmt, exc, time.perf_counter() - started)
        logger.warning("Upload %s of commit %s cannot be parsed: %s", upload_id, commitid, exc)
        _set_state(services, upload_id, UploadState.ERROR, error=str(exc)[:2000])
        # The commit may be settled now.
        finish(repoid, commitid, state.drop_processing(repoid, commitid, upload_id))
        return UploadState.ERROR

    services.metrics.upload_parsed(fmt, None, time.perf_counter() - started)
    state.store_intermediate(repoid, commitid, upload_id, report.to_bytes())
    moved = _set_state(
        services,
        upload_id,
        UploadState.PROCESSED,
        processed_at=utcnow(),
        report_format=fmt,
        warnings=warnings,
    )
    if moved:
        processing = state.mark_processed(repoid, commitid, upload_id)
    else:  # merged or failed meanwhile (a duplicate delivery got there first)
        processing = state.drop_processing(repoid, commitid, upload_id)
    finish(repoid, commitid, processing)
    return UploadState.PROCESSED
