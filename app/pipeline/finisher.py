"""``upload_finisher``: the cooperative merge of a commit's processed uploads.

Whichever finisher holds the commit's lock merges *every* upload in the
processed set, a whole pass per transaction, not only the upload its
message was sent for. The others find the lock held and exit at once: the
holder re-checks the set after releasing the lock, so nothing they came for
is left behind (I5):

    processor: mark processed (SADD) ──► send finisher ──► lock busy, exit
    holder:                          ... release lock ──► re-check set ──► sees it

The merge transaction locks the commit report row, merges only uploads the
database still calls ``processed`` and flips them to ``merged`` in the same
transaction: two finishers that overlap after a lock expired cannot add an
upload twice (I2). Redis is tidied only after that transaction commits.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import sqlalchemy as sa
from redis.exceptions import LockError
from redis.lock import Lock
from sqlalchemy.orm import Session

from app.coverage import codec
from app.coverage.columnar import Accumulator, Columns, Part
from app.db.models import (
    CommitReport,
    ReportUpload,
    Upload,
    UploadState,
    fail_uploads,
    uploads_in_flight,
    utcnow,
)
from app.merge.carryforward import CarryforwardPass, HeadYaml, read_head_yaml
from app.merge.file_lines import store_file_lines, store_pages
from app.merge.flag_reports import FlagMerge
from app.merge.report_summary import FileTotalsTable, summarise
from app.notify.notifier import needs_notification
from app.runtime.gc_pause import gc_paused
from app.runtime.services import Services
from app.settings import Settings

logger = logging.getLogger(__name__)

#: Intermediate reports fetched from Redis per MGET while merging.
LOAD_CHUNK = 50

SendPair = Callable[[int, int], object]
SendUpload = Callable[[int], object]


def debounce_ms(settings: Settings, last_run_ms: int) -> int:
    """The debounce window of a commit's next finisher: the base window, or
    ``finisher_debounce_factor`` times the commit's last run if longer, at
    most ``finisher_debounce_max_ms``."""
    scaled = int(settings.finisher_debounce_factor * last_run_ms)
    return max(settings.finisher_debounce_ms, min(settings.finisher_debounce_max_ms, scaled))


@dataclass(slots=True)
class FinisherOutcome:
    """What one finisher delivery did (tests and the demo count these)."""

    early_exit: bool = False
    lock_busy: bool = False
    #: Too few processed for a batch while others are processing: left for
    #: the finisher of the next upload processed (``COVWORKER_FINISHER_MIN_BATCH``).
    batch_wait: bool = False
    lock_acquisitions: int = 0
    merge_passes: int = 0
    merged: list[int] = field(default_factory=list)
    redriven: list[int] = field(default_factory=list)
    notified: bool = False


@dataclass(slots=True)
class PassResult:
    merged: list[int]
    done: list[int]  # left the processed set for good (merged, or final already)
    redrive: list[int]  # back to processing: intermediate missing or unreadable
    version: int
    #: The settled version's windows, when the pass was asked to leave them
    #: for after the notification (``merge_pass(windows_later=True)``).
    windows: LaterWindows | None = None
    #: The new version settles the commit: no upload of it is in flight.
    settled: bool = False


def finish_commit(
    services: Services,
    repoid: int,
    commitid: int,
    *,
    send_notify: SendPair,
    send_processor: SendUpload,
) -> FinisherOutcome:
    state = services.state
    outcome = FinisherOutcome()
    entry = state.enter_finisher(repoid, commitid)  # counts those that leave here
    if entry.processed == 0:
        outcome.early_exit = True
        # Redis's marker is a cache: "not notified" sends notify (which decides
        # in Postgres); "notified" is believed only once Postgres agrees, so a
        # marker Redis kept while losing later writes suppresses nothing.
        if entry.processing == 0 and (not entry.notified or needs_notification(services, commitid)):
            send_notify(repoid, commitid)
            outcome.notified = True
        return outcome
    lock = entry.lock
    if lock is None:
        if not state.batch_ready(entry.processing, entry.processed):
            # Every upload still processing sends a finisher when it is done.
            outcome.batch_wait = True
        else:  # the holder re-checks the set after it releases (I5)
            outcome.lock_busy = True
        return outcome

    windows: LaterWindows | None = None
    while True:  # holding the lock
        outcome.lock_acquisitions += 1
        try:
            # Before the commit's first pass: its own codecov.yml says which
            # flags are carried (a provider read, cached per commit).
            head = read_head_yaml(services, commitid)
            if services.providers.by_service:  # the read may have taken a while
                _renew(lock, repoid, commitid)
            while ids := state.processed_ids(repoid, commitid, services.settings.merge_batch_size):
                result = merge_pass(
                    services, repoid, commitid, ids, lock, windows_later=True, head_yaml=head
                )
                outcome.merge_passes += 1
                outcome.merged += result.merged
                outcome.redriven += result.redrive
                windows = result.windows or windows
                for upload_id in result.redrive:
                    send_processor(upload_id)
                # With a batch of 1 the loop's own fetch is the check: no round trip.
                if state.min_batch > 1 and not state.batch_ready(*state.counts(repoid, commitid)):
                    break  # too few while others process: their finishers come
        finally:
            _release(lock, repoid, commitid)
        processing, processed = state.counts(repoid, commitid)
        if processed:
            if state.batch_ready(processing, processed) and lock.acquire(blocking=False):
                continue  # marked while we were releasing: go again
            # Another finisher took the lock (it re-checks when it releases), or
            # the batch waits for the finishers of the uploads still processing (I5).
            break
        if processing == 0:
            send_notify(repoid, commitid)
            outcome.notified = True
        break
    if windows is not None:
        # After the notification is sent: the windows are the settled version's
        # longest write (0.5-0.9 s at 1,000,000 lines) and the notification
        # does not read them. A page asked for meanwhile decodes the report.
        store_windows_later(services, windows)

    state.count(
        repoid,
        commitid,
        finisher_runs=1,
        lock_acquisitions=outcome.lock_acquisitions,
        merge_passes=outcome.merge_passes,
        uploads_merged=len(outcome.merged),
        redriven=len(outcome.redriven),
    )
    return outcome


def _release(lock: Lock, repoid: int, commitid: int) -> None:
    try:
        lock.release()
    except LockError:
        logger.warning(
            "Finisher lock of commit %s:%s expired during the merge; the Postgres "
            "fence kept the merge exact.",
            repoid,
            commitid,
        )


def _renew(lock: Lock, repoid: int, commitid: int) -> None:
    try:
        lock.reacquire()
    except LockError:
        logger.warning("Finisher lock of commit %s:%s was lost mid-merge.", repoid, commitid)


@dataclass(slots=True)
class Classified:
    """The uploads of a pass by what the database says of them."""

    eligible: list[int]  # processed: merge them
    redrive: list[int]  # still uploaded or processing in the database: back through processing
    done: list[int]  # final already (merged by an overlapping finisher, or error) or unknown


@dataclass(slots=True)
class Merged:
    """What the merge step read: the accumulated report and the uploads in it."""

    report: Accumulator
    merged: list[int]
    lost: list[int]  # parsed, but the intermediate is missing or unreadable


def merge_pass(
    services: Services,
    repoid: int,
    commitid: int,
    ids: Sequence[int],
    lock: Lock | None,
    *,
    windows_later: bool = False,
    head_yaml: HeadYaml | None = None,
) -> PassResult:
    """Merge the processed uploads ``ids`` into the commit report, in one
    transaction: :func:`classify` them by their rows (locked), :func:`merge`
    their intermediates, :func:`record` the new version; then tidy Redis.
    ``windows_later``: a version that settles the commit gets its windows
    from :func:`store_windows_later` (``PassResult.windows``), not in the
    transaction. ``head_yaml``: the commit's own ``codecov.yml``, read before
    its first pass (``app.merge.carryforward.read_head_yaml``)."""
    state, started = services.state, time.perf_counter()
    with gc_paused(), services.sessions.begin() as session:
        report_row = _lock_report(session, commitid)
        rows = session.execute(
            sa.select(Upload.id, Upload.state, Upload.redrives)
            .where(Upload.id.in_(ids), Upload.commit_id == commitid)
            .with_for_update()
        ).all()
        sorted_ids = classify(ids, {row.id: row.state for row in rows})
        redrives = {row.id: row.redrives for row in rows}

        # Carried-forward flags: the merge goes into the commit's own uploads;
        # a merged upload of a carried flag replaces it (``app.merge.carryforward``).
        carry = CarryforwardPass(session, commitid, report_row, head_yaml)
        report = Accumulator()
        kept = services.kept_report.take(commitid, report_row.version)
        if kept is not None:  # this process wrote the current version (app.runtime.kept_report)
            report.files = kept
        elif own_report := carry.own_report():
            report.add(codec.load_part(own_report))
        flag_reports = FlagMerge(session, commitid, sorted_ids.eligible)
        settled_before = report_row.lines_version is not None
        touched: set[str] = set()

        def each(upload_id: int, part: Part) -> None:
            touched.update(part.files)
            flag_reports.add(upload_id, part)

        def renew() -> None:
            if lock is not None:
                _renew(lock, repoid, commitid)

        merged = merge(
            sorted_ids.eligible,
            lambda chunk: state.load_intermediates(repoid, commitid, chunk),
            report,
            each=each,
            renew=renew,
        )
        services.kept_report.touched(commitid, touched)
        result = record(
            session,
            report_row,
            carry,
            flag_reports,
            sorted_ids,
            merged,
            redrives=redrives,
            max_redrives=services.settings.max_redrives,
            where=f"{repoid}:{commitid}",
            windows_later=windows_later,
        )
    if result.merged:  # committed
        if result.settled and not settled_before:  # a burst: no pass expected
            services.kept_report.forget(commitid)
        else:
            services.kept_report.keep(commitid, result.version, report.files)
    services.metrics.merge_pass(len(result.merged), time.perf_counter() - started)
    state.settle_merged(
        repoid,
        commitid,
        done=result.done,
        redrive=result.redrive,
        version=result.version if result.merged else None,
    )
    if result.redrive:
        logger.warning(
            "Commit %s:%s: re-driving uploads %s through processing (intermediate missing).",
            repoid,
            commitid,
            result.redrive,
        )
    return result


def classify(ids: Sequence[int], states: Mapping[int, str]) -> Classified:
    """Which of ``ids`` (in the processed set) this pass merges, which go back
    through processing and which leave the set, by their state in the
    database (``states``; an id without a row is unknown)."""
    eligible = [u for u in ids if states.get(u) == UploadState.PROCESSED]
    # In the set but not processed in the database: final (merged by an
    # overlapping finisher, or error) or unknown ids leave the set; ids the
    # database still sees in flight go back through processing.
    redrive = [u for u in ids if states.get(u) in (UploadState.UPLOADED, UploadState.PROCESSING)]
    done = [u for u in ids if u not in redrive and u not in eligible]
    return Classified(eligible=eligible, redrive=redrive, done=done)


def merge(
    eligible: Sequence[int],
    load: Callable[[list[int]], Sequence[bytes | None]],
    report: Accumulator,
    *,
    each: Callable[[int, Part], object] = lambda upload_id, part: None,
    renew: Callable[[], object] = lambda: None,
) -> Merged:
    """Add the intermediates of ``eligible`` to ``report``, ``LOAD_CHUNK`` at a
    time (``load``: their blobs, None for a missing one). Column by column
    (``app.coverage.columnar``): the same report as ``Report.merge``, without a
    Python object per line record. ``each`` sees every part merged (the
    per-flag reports); ``renew`` runs after each chunk (the lock)."""
    merged: list[int] = []
    lost: list[int] = []
    for start in range(0, len(eligible), LOAD_CHUNK):
        chunk = list(eligible[start : start + LOAD_CHUNK])
        blobs = list(load(chunk))
        if len(blobs) != len(chunk):
            raise ValueError(f"{len(blobs)} intermediates loaded for {len(chunk)} uploads")
        for i, upload_id in enumerate(chunk):
            # Each blob and part is let go once merged, before the next is
            # decoded: a pass of several big uploads holds one at a time.
            part, blobs[i] = _decode(blobs[i], upload_id), None
            if part is None:
                lost.append(upload_id)
                continue
            report.add(part)
            each(upload_id, part)
            merged.append(upload_id)
            del part
        renew()
    return Merged(report=report, merged=merged, lost=lost)


def record(
    session: Session,
    report_row: CommitReport,
    carry: CarryforwardPass,
    flag_reports: FlagMerge,
    sorted_ids: Classified,
    merged: Merged,
    *,
    redrives: Mapping[int, int],
    max_redrives: int,
    where: str,
    windows_later: bool = False,
) -> PassResult:
    """Write the pass in its transaction: a new report version holding the
    merged uploads (flipped to merged), and the lost ones back to processing,
    or to error once re-driven ``max_redrives`` times."""
    done, redrive = list(sorted_ids.done), list(sorted_ids.redrive)
    given_up = [u for u in merged.lost if redrives.get(u, 0) >= max_redrives]
    if given_up:  # re-driven ``max_redrives`` times and still no intermediate: stop the cycle
        reason = (
            f"its parsed report was missing or unreadable in Redis after being "
            f"re-driven {max_redrives} times (COVWORKER_MAX_REDRIVES)"
        )
        fail_uploads(session, given_up, reason, utcnow())
        done += given_up
        logger.warning(
            "Commit %s: uploads %s end in error: no readable intermediate after %s re-drives.",
            where,
            given_up,
            max_redrives,
        )
    again = [u for u in merged.lost if u not in given_up]
    if again:
        session.execute(
            sa.update(Upload)
            .where(Upload.id.in_(again))
            .values(
                state=UploadState.PROCESSING,
                redrives=Upload.redrives + 1,
                updated_at=utcnow(),
            )
        )
    redrive += again
    if redrive:
        session.execute(
            sa.update(Upload)
            .where(Upload.id.in_(redrive))
            .values(state=UploadState.PROCESSING, updated_at=utcnow())
        )
    version, windows, settled = report_row.version, None, False
    if merged.merged:
        version += 1
        windows, settled = _record_version(
            session, report_row, carry, flag_reports, merged, version, windows_later
        )
    return PassResult(
        merged=merged.merged,
        done=[*merged.merged, *done],
        redrive=redrive,
        version=version,
        windows=windows,
        settled=settled,
    )


def _record_version(
    session: Session,
    report_row: CommitReport,
    carry: CarryforwardPass,
    flag_reports: FlagMerge,
    merged: Merged,
    version: int,
    windows_later: bool,
) -> tuple[LaterWindows | None, bool]:
    """Store the new version; its windows if they are left for later, and
    whether it settles the commit."""
    report_row.version = version
    flag_reports.save()
    report_row.report, totals, report_row.uploaded_report = carry.finish(merged.report)
    report_row.totals = dict(totals.to_dict())
    session.add_all(
        ReportUpload(commit_id=report_row.commit_id, report_version=version, upload_id=u)
        for u in merged.merged
    )
    report_row.updated_at = utcnow()
    session.execute(
        sa.update(Upload)
        .where(Upload.id.in_(merged.merged), Upload.state == UploadState.PROCESSED)
        .values(
            state=UploadState.MERGED,
            merged_version=version,
            merged_at=utcnow(),
            updated_at=utcnow(),
        )
    )
    # What the pages of this version need (app.merge.report_summary,
    # app.merge.file_lines), for the version that settles the commit only: while
    # other uploads are in flight a later pass replaces this version, and
    # writing 20,000 files' windows per pass would make each pass of a
    # trickle cost the whole report instead of what it merges. The pages of
    # an unsettled version decode the report; the notifier completes a
    # settled version whose pass did not store them (``complete_pages``).
    if uploads_in_flight(session, report_row.commit_id):
        report_row.file_totals = None
        return None, False
    # The stored report is the pass's own unless flags were carried in.
    files = (
        merged.report.files
        if report_row.uploaded_report is None
        else codec.load_part(report_row.report).files
        if report_row.report
        else {}
    )
    if not windows_later:
        store_pages(session, report_row, files)
        return None, True
    file_totals = summarise(session, report_row, files)
    return LaterWindows(report_row.commit_id, version, files, file_totals), True


@dataclass(frozen=True, slots=True)
class LaterWindows:
    """A settled version's lines, to store in windows after its notification."""

    commit_id: int
    version: int
    files: Mapping[str, Columns]
    totals: FileTotalsTable


def store_windows_later(services: Services, later: LaterWindows) -> None:
    """Store ``later``'s windows, unless its version was replaced meanwhile
    (the pass of the newer version stores its own)."""
    with gc_paused(), services.sessions.begin() as session:
        row = _lock_report(session, later.commit_id)
        if row.version == later.version and row.lines_version != later.version:
            encoded = services.kept_report.windows(later.commit_id)
            store_file_lines(session, row, later.files, totals=later.totals, encoded=encoded)
            services.kept_report.windows_stored(later.commit_id, sum(later.totals.lines))


def _lock_report(session: Session, commitid: int) -> CommitReport:
    row = session.scalar(
        sa.select(CommitReport).where(CommitReport.commit_id == commitid).with_for_update()
    )
    if row is None:  # commits are created with their report; be forgiving anyway
        session.add(CommitReport(commit_id=commitid))
        session.flush()
        row = session.scalar(
            sa.select(CommitReport).where(CommitReport.commit_id == commitid).with_for_update()
        )
    assert row is not None
    return row


def _decode(blob: bytes | None, upload_id: int) -> Part | None:
    if blob is None:
        return None
    try:
        return codec.load_part(blob)
    except Exception:  # a corrupt intermediate is re-parsed from the raw bytes
        logger.warning("Intermediate report of upload %s is unreadable.", upload_id)
        return None
