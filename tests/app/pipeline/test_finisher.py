"""The cooperative finisher, after the original design's test plan."""

from __future__ import annotations

import dataclasses
import functools
import json
import tracemalloc
from concurrent.futures import ThreadPoolExecutor

import pytest
import sqlalchemy as sa

from app.coverage import codec, parse_report
from app.coverage.columnar import Accumulator
from app.coverage.model import FileCoverage, Report
from app.db.models import (
    CommitReport,
    ReportFileLines,
    Upload,
    UploadState,
    fail_uploads,
    merged_upload_ids,
    utcnow,
)
from app.merge.file_lines import complete_pages
from app.merge.report_summary import columns_file_totals, load_file_totals
from app.pipeline import finisher as finisher_module
from app.pipeline.finisher import finish_commit
from app.runtime.kept_report import KeptReport
from app.runtime.services import Services
from app.runtime.state import ProcessingState
from tests.support.pipeline import Pipeline
from tests.support.redis_commands import CommandCounter, counting_client
from tests.support.synthetic import (
    ci_matrix,
    expected_totals,
    job_hits,
    monorepo_lcov,
    summed_line_hits,
)
from tests.support.threads import all_at_once

pytestmark = pytest.mark.timeout(120)


def processed_commit(pipeline: Pipeline, n: int) -> tuple[int, int, list[int]]:
    accepted = pipeline.upload(ci_matrix(n, files=3, lines=20))
    for upload_id in accepted.upload_ids:
        assert pipeline.process(upload_id) == UploadState.PROCESSED
    return accepted.repoid, accepted.commitid, accepted.upload_ids


def report_row(pipeline: Pipeline, commitid: int) -> CommitReport:
    with pipeline.services.sessions() as session:
        row = session.scalar(sa.select(CommitReport).where(CommitReport.commit_id == commitid))
        assert row is not None
        return row


def stored_report(pipeline: Pipeline, commitid: int) -> bytes:
    """The commit's merged report as stored (the column is deferred on ``report_row``)."""
    with pipeline.services.sessions() as session:
        blob = session.scalar(
            sa.select(CommitReport.report).where(CommitReport.commit_id == commitid)
        )
    assert blob is not None
    return blob


def merged_ids(pipeline: Pipeline, commitid: int) -> list[int]:
    with pipeline.services.sessions() as session:
        return merged_upload_ids(session, commitid)


def states(pipeline: Pipeline, ids: list[int]) -> set[str]:
    with pipeline.services.sessions() as session:
        return set(session.scalars(sa.select(Upload.state).where(Upload.id.in_(ids))))


def test_the_holder_takes_the_whole_processed_set_in_one_pass(pipeline: Pipeline) -> None:
    repoid, commitid, ids = processed_commit(pipeline, 25)

    outcome = pipeline.finish(repoid, commitid)

    assert outcome.merge_passes == 1 and outcome.lock_acquisitions == 1
    assert sorted(outcome.merged) == sorted(ids)
    row = report_row(pipeline, commitid)
    assert sorted(merged_ids(pipeline, commitid)) == sorted(ids) and row.version == 1
    assert states(pipeline, ids) == {UploadState.MERGED}
    assert pipeline.services.state.counts(repoid, commitid) == (0, 0)
    assert pipeline.outbox.notify == [(repoid, commitid)]
    lock_key = pipeline.services.state.keys(repoid, commitid).lock
    assert not pipeline.services.redis.exists(lock_key)  # the entry's lock was released


def test_while_others_process_a_lone_processed_upload_waits_for_the_next_ones_finisher(
    pipeline: Pipeline,
) -> None:
    assert pipeline.services.state.min_batch == 1  # COVWORKER_FINISHER_MIN_BATCH's default
    pipeline.services.state.min_batch = 2
    accepted = pipeline.upload(ci_matrix(3, files=3, lines=20))
    repoid, commitid, (first, second, last) = (
        accepted.repoid,
        accepted.commitid,
        accepted.upload_ids,
    )

    pipeline.process(first)
    waited = pipeline.finish(repoid, commitid)
    assert waited.batch_wait and not waited.lock_busy and waited.merge_passes == 0
    lock_key = pipeline.services.state.keys(repoid, commitid).lock
    assert not pipeline.services.redis.exists(lock_key)  # the lock was not even tried

    pipeline.process(second)
    both = pipeline.finish(repoid, commitid)
    assert both.merge_passes == 1 and sorted(both.merged) == sorted([first, second])
    assert pipeline.outbox.notify == []

    pipeline.process(last)  # the last upload in flight never waits
    alone = pipeline.finish(repoid, commitid)
    assert alone.merged == [last] and alone.notified
    assert pipeline.services.state.stats(repoid, commitid)["batch_waits"] == 1


def test_the_holder_stops_passing_when_too_few_are_left_while_others_process(
    pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    pipeline.services.state.min_batch = 2
    accepted = pipeline.upload(ci_matrix(4, files=3, lines=20))
    repoid, commitid, ids = accepted.repoid, accepted.commitid, accepted.upload_ids
    pipeline.process(ids[0])
    pipeline.process(ids[1])
    real_pass = finisher_module.merge_pass

    def upload_processed_during_the_pass(*args: object, **kwargs: object) -> object:
        result = real_pass(*args, **kwargs)  # type: ignore[arg-type]
        if ids[2] not in merged_ids(pipeline, commitid) and states(pipeline, [ids[2]]) == {
            UploadState.UPLOADED
        }:
            pipeline.process(ids[2])  # one processed, one (ids[3]) still processing
        return result

    monkeypatch.setattr(finisher_module, "merge_pass", upload_processed_during_the_pass)
    holder = pipeline.finish(repoid, commitid)

    assert holder.merge_passes == 1 and sorted(holder.merged) == sorted(ids[:2])
    assert pipeline.services.state.counts(repoid, commitid) == (1, 1)
    pipeline.process(ids[3])
    assert sorted(pipeline.finish(repoid, commitid).merged) == sorted(ids[2:])
    assert sorted(merged_ids(pipeline, commitid)) == sorted(ids)


def test_merged_totals_equal_the_sum_computed_independently(pipeline: Pipeline) -> None:
    repoid, commitid, _ = processed_commit(pipeline, 12)
    pipeline.finish(repoid, commitid)

    expected = expected_totals([job_hits(job, files=3, lines=20) for job in range(12)])
    totals = report_row(pipeline, commitid).totals
    assert {k: totals[k] for k in expected} == expected


def test_with_both_sets_empty_the_finisher_exits_without_touching_the_lock(
    pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    repoid, commitid, _ = processed_commit(pipeline, 3)
    pipeline.finish(repoid, commitid)
    assert pipeline.services.state.counts(repoid, commitid) == (0, 0)

    def no_lock(*args: object, **kwargs: object) -> None:
        raise AssertionError("the finisher touched the lock")

    monkeypatch.setattr(ProcessingState, "lock", no_lock)
    outcome = pipeline.finish(repoid, commitid)

    assert outcome.early_exit and outcome.lock_acquisitions == 0 and outcome.merge_passes == 0


def test_the_lock_holder_merges_uploads_other_finishers_were_sent_for(pipeline: Pipeline) -> None:
    repoid, commitid, ids = processed_commit(pipeline, 6)
    lock = pipeline.services.state.lock(repoid, commitid)
    assert lock.acquire(blocking=False)  # someone else holds the lock ...
    busy = [pipeline.finish(repoid, commitid) for _ in ids]
    assert all(o.lock_busy and not o.merged for o in busy)  # ... so they leave at once
    assert lock.owned()  # and leave it alone
    lock.release()
    stats = pipeline.services.state.stats(repoid, commitid)
    assert stats["lock_busy"] == stats["finisher_runs"] == len(ids)

    holder = pipeline.finish(repoid, commitid)  # one delivery merges all six

    assert sorted(holder.merged) == sorted(ids)
    assert states(pipeline, ids) == {UploadState.MERGED}


def test_a_finisher_that_finds_the_lock_busy_costs_one_redis_round_trip(
    real_pipeline: Pipeline,
) -> None:
    """In a stampede almost every admitted finisher leaves at once: that path
    is one script (counts, notified marker, lock attempt, its own stats)."""
    repoid, commitid, _ = processed_commit(real_pipeline, 2)
    counter = CommandCounter()
    settings = real_pipeline.services.settings
    counted = Services.from_settings(
        settings, redis_client=counting_client(settings.redis_url, counter)
    )
    try:
        lock = counted.state.lock(repoid, commitid)
        assert lock.acquire(blocking=False)
        finish = functools.partial(
            finish_commit,
            counted,
            repoid,
            commitid,
            send_notify=real_pipeline.outbox.send_notify,
            send_processor=real_pipeline.outbox.send_processor,
        )
        assert finish().lock_busy  # loads the script
        before = counter.value
        assert finish().lock_busy
        assert counter.value - before == 1
        lock.release()
    finally:
        counted.close()


def test_a_finisher_whose_upload_the_holder_already_merged_exits_cleanly(
    pipeline: Pipeline,
) -> None:
    repoid, commitid, ids = processed_commit(pipeline, 4)
    pipeline.finish(repoid, commitid)
    version = report_row(pipeline, commitid).version

    late = pipeline.finish(repoid, commitid)

    assert late.early_exit and not late.merged
    assert pipeline.services.state.stats(repoid, commitid)["early_exits"] == 1
    row = report_row(pipeline, commitid)
    assert row.version == version and sorted(merged_ids(pipeline, commitid)) == sorted(ids)


def test_an_upload_processed_during_the_holders_last_pass_is_merged_before_notify(
    pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    accepted = pipeline.upload(ci_matrix(4, files=2, lines=10))
    first, last = accepted.upload_ids[:3], accepted.upload_ids[3]
    for upload_id in first:
        pipeline.process(upload_id)
    real_merge_pass = finisher_module.merge_pass
    seen_at_notify: list[list[int]] = []
    late_finishers: list[object] = []

    def merge_pass_with_a_late_upload(*args, **kwargs):  # type: ignore[no-untyped-def]
        result = real_merge_pass(*args, **kwargs)
        if not late_finishers:  # the holder's pass is done, its lock still held
            pipeline.process(last)  # marks `last` processed, sends its finisher
            late_finishers.append(pipeline.finish(accepted.repoid, accepted.commitid))
        return result

    def record_notify(repoid: int, commitid: int) -> None:
        seen_at_notify.append(merged_ids(pipeline, commitid))

    monkeypatch.setattr(finisher_module, "merge_pass", merge_pass_with_a_late_upload)
    pipeline.outbox.send_notify = record_notify  # type: ignore[method-assign]
    holder = pipeline.finish(accepted.repoid, accepted.commitid)

    assert late_finishers[0].lock_busy  # type: ignore[attr-defined]
    assert holder.merge_passes == 2 and sorted(holder.merged) == sorted(accepted.upload_ids)
    assert len(seen_at_notify) == 1  # one notify, and it saw every upload merged
    assert sorted(seen_at_notify[0]) == sorted(accepted.upload_ids)


def stored_pages(pipeline: Pipeline, commitid: int) -> tuple[int, bool, int | None, int]:
    """The commit's report version, whether its per-file totals are stored,
    the version its windows are stored for and how many window rows exist."""
    row = report_row(pipeline, commitid)
    with pipeline.services.sessions() as session:
        has_totals = session.scalar(
            sa.select(CommitReport.file_totals.is_not(None)).where(
                CommitReport.commit_id == commitid
            )
        )
        windows = session.scalar(
            sa.select(sa.func.count())
            .select_from(ReportFileLines)
            .where(ReportFileLines.commit_id == commitid)
        )
    return row.version, bool(has_totals), row.lines_version, windows or 0


def test_a_pass_that_leaves_uploads_in_flight_stores_the_pages_data_only_once_settled(
    pipeline: Pipeline,
) -> None:
    accepted = pipeline.upload(ci_matrix(3, files=2, lines=10))
    first, last = accepted.upload_ids[:2], accepted.upload_ids[2]
    for upload_id in first:
        pipeline.process(upload_id)

    pipeline.finish(accepted.repoid, accepted.commitid)
    # `last` is still uploaded: the next pass replaces this version
    assert stored_pages(pipeline, accepted.commitid) == (1, False, None, 0)

    pipeline.process(last)
    pipeline.finish(accepted.repoid, accepted.commitid)
    version, has_totals, lines_version, windows = stored_pages(pipeline, accepted.commitid)
    assert (version, has_totals, lines_version) == (2, True, 2)
    assert windows == 2  # one window per file
    with pipeline.services.sessions() as session:
        stored = load_file_totals(session, accepted.commitid)
    blob = stored_report(pipeline, accepted.commitid)
    assert stored == columns_file_totals(codec.load_part(blob).files)


def test_the_settled_versions_windows_are_written_after_its_notification_is_sent(
    pipeline: Pipeline,
) -> None:
    repoid, commitid, _ = processed_commit(pipeline, 3)
    at_notify: list[tuple[int, bool, int | None, int]] = []
    pipeline.outbox.send_notify = (  # type: ignore[method-assign]
        lambda r, c: at_notify.append(stored_pages(pipeline, c))
    )

    pipeline.finish(repoid, commitid)

    # the notification reads the per-file totals; the windows come after it
    assert at_notify == [(1, True, None, 0)]
    assert stored_pages(pipeline, commitid) == (1, True, 1, 3)


def test_windows_left_for_later_are_not_stored_once_a_newer_version_replaced_theirs(
    pipeline: Pipeline,
) -> None:
    repoid, commitid, ids = processed_commit(pipeline, 2)
    services = pipeline.services
    older = finisher_module.merge_pass(services, repoid, commitid, ids, None, windows_later=True)
    assert older.windows is not None and older.windows.version == 1
    processed_commit(pipeline, 1)  # one more upload of the same commit
    pipeline.finish(repoid, commitid)  # version 2, its windows stored

    finisher_module.store_windows_later(services, older.windows)

    assert stored_pages(pipeline, commitid) == (2, True, 2, 3)


def test_the_notifier_completes_the_pages_data_of_a_version_settled_without_a_pass(
    pipeline: Pipeline,
) -> None:
    accepted = pipeline.upload(ci_matrix(2, files=2, lines=10))
    merged_one, failed_one = accepted.upload_ids
    pipeline.process(merged_one)
    pipeline.finish(accepted.repoid, accepted.commitid)
    assert stored_pages(pipeline, accepted.commitid) == (1, False, None, 0)

    with pipeline.services.sessions.begin() as session:  # its parse fails later
        fail_uploads(session, [failed_one], "unreadable", utcnow())
    assert pipeline.notify(accepted.repoid, accepted.commitid).created

    assert stored_pages(pipeline, accepted.commitid) == (1, True, 1, 2)
    with pipeline.services.sessions.begin() as session:  # stored once: nothing left to do
        assert not complete_pages(session, accepted.commitid)


def stored_line_hits(pipeline: Pipeline, commitid: int) -> dict[tuple[str, int], int]:
    report = codec.load(stored_report(pipeline, commitid))
    return {(path, ln): n for path, fc in report.files.items() for ln, n in fc.lines.items()}


def summed_hits(jobs: range) -> dict[tuple[str, int], int]:
    """The hits of ``jobs`` (of ``processed_commit``'s matrix) summed line by line."""
    return summed_line_hits([job_hits(job, files=3, lines=20) for job in jobs])


def test_the_next_pass_of_a_commit_merges_into_the_report_its_process_kept(
    pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    accepted = pipeline.upload(ci_matrix(3, files=3, lines=20))
    repoid, commitid, (first, second, third) = (
        accepted.repoid,
        accepted.commitid,
        accepted.upload_ids,
    )
    for upload_id in (first, second):
        pipeline.process(upload_id)
    pipeline.finish(repoid, commitid)  # version 1, the third upload still in flight
    version_1 = stored_report(pipeline, commitid)
    decoded: list[bytes] = []
    load_part = codec.load_part
    monkeypatch.setattr(codec, "load_part", lambda blob: decoded.append(blob) or load_part(blob))

    pipeline.process(third)
    pipeline.finish(repoid, commitid)

    assert version_1 not in decoded and len(decoded) == 1  # the third's intermediate only
    assert stored_line_hits(pipeline, commitid) == summed_hits(range(3))
    assert pipeline.services.kept_report.take(commitid, 2) is None  # settled: none kept


def test_a_commit_that_settles_again_keeps_its_report_for_the_next_arrival(
    pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    def arrive(job: int) -> tuple[int, int]:
        # each job's upload arrives after the one before has settled the commit
        accepted = pipeline.upload(ci_matrix(1, files=3, lines=20, first_job=job), sha="c" * 40)
        (upload_id,) = accepted.upload_ids
        pipeline.process(upload_id)
        pipeline.finish(accepted.repoid, accepted.commitid)
        return accepted.repoid, accepted.commitid

    _, commitid = arrive(0)  # version 1 settles: a burst, forgotten
    assert pipeline.services.kept_report.take(commitid, 1) is None
    arrive(1)  # version 2 settles again: a trickle, kept
    decoded: list[bytes] = []
    load_part = codec.load_part
    monkeypatch.setattr(codec, "load_part", lambda blob: decoded.append(blob) or load_part(blob))

    arrive(2)

    assert len(decoded) == 1  # the third's intermediate, not version 2's report
    assert stored_line_hits(pipeline, commitid) == summed_hits(range(3))


def test_a_kept_report_whose_version_another_process_replaced_is_not_merged_into(
    pipeline: Pipeline,
) -> None:
    accepted = pipeline.upload(ci_matrix(4, files=3, lines=20))
    repoid, commitid, ids = accepted.repoid, accepted.commitid, accepted.upload_ids
    other_process = Pipeline(dataclasses.replace(pipeline.services, kept_report=KeptReport()))
    pipeline.process(ids[0])
    pipeline.finish(repoid, commitid)  # version 1, kept in this process
    pipeline.process(ids[1])
    other_process.finish(repoid, commitid)  # version 2, written by the other one
    pipeline.process(ids[2])

    pipeline.finish(repoid, commitid)  # version 3: version 2 and the third upload

    assert report_row(pipeline, commitid).version == 3
    assert stored_line_hits(pipeline, commitid) == summed_hits(range(3))


#: How long the notification may take while another transaction holds the report row (s).
NOTIFY_WAIT_S = 10.0


@pytest.mark.integration
def test_the_notification_does_not_wait_for_the_windows_write_holding_the_report_row(
    real_pipeline: Pipeline,
) -> None:
    pipeline = real_pipeline
    repoid, commitid, ids = processed_commit(pipeline, 2)
    settled = finisher_module.merge_pass(
        pipeline.services, repoid, commitid, ids, None, windows_later=True
    )
    assert settled.windows is not None  # totals stored, windows left for after the notification

    with ThreadPoolExecutor(1) as pool, pipeline.services.sessions.begin() as session:
        # what ``store_windows_later`` holds while it writes 20,000 files' windows
        session.execute(
            sa.select(CommitReport.id).where(CommitReport.commit_id == commitid).with_for_update()
        )
        notified = pool.submit(pipeline.notify, repoid, commitid)
        result = notified.result(timeout=NOTIFY_WAIT_S)  # the lock is released after this

    assert result.created and result.version == 1


def test_a_missing_intermediate_report_is_redriven_not_merged_as_empty(pipeline: Pipeline) -> None:
    repoid, commitid, ids = processed_commit(pipeline, 3)
    lost = ids[1]
    pipeline.services.redis.delete(pipeline.services.state.keys(repoid, commitid).report(lost))

    outcome = pipeline.finish(repoid, commitid)

    assert outcome.redriven == [lost] and lost not in outcome.merged
    assert pipeline.outbox.processor == [lost]
    assert pipeline.services.state.counts(repoid, commitid) == (1, 0)
    assert pipeline.outbox.notify == []  # not settled while it is re-parsed
    assert pipeline.process(lost) == UploadState.PROCESSED
    pipeline.finish(repoid, commitid)
    assert sorted(merged_ids(pipeline, commitid)) == sorted(ids)
    assert pipeline.outbox.notify == [(repoid, commitid)]


@pytest.mark.integration
def test_concurrent_finishers_on_real_redis_merge_each_upload_once(real_pipeline: Pipeline) -> None:
    pipeline = real_pipeline
    repoid, commitid, ids = processed_commit(pipeline, 40)

    outcomes = all_at_once([functools.partial(pipeline.finish, repoid, commitid)] * 16)

    assert len(outcomes) == 16  # every finisher came back
    merged = [u for o in outcomes for u in o.merged]
    assert sorted(merged) == sorted(ids)  # each exactly once
    assert sum(o.merge_passes for o in outcomes) <= 3
    assert sorted(merged_ids(pipeline, commitid)) == sorted(ids)
    # Each outcome either merged, found the lock busy or left early, and the
    # notifies sent are exactly those the outcomes say they sent.
    assert all(o.merge_passes or o.lock_busy or o.early_exit for o in outcomes)
    assert len(pipeline.outbox.notify) == sum(o.notified for o in outcomes) >= 1
    assert set(pipeline.outbox.notify) == {(repoid, commitid)}


@pytest.mark.integration
def test_overlapping_merge_passes_after_a_lost_lock_merge_each_upload_once(
    real_pipeline: Pipeline,
) -> None:
    pipeline = real_pipeline
    repoid, commitid, ids = processed_commit(pipeline, 20)
    # Two passes at once, as if each believed it held the lock.
    overlapping_pass = functools.partial(
        finisher_module.merge_pass, pipeline.services, repoid, commitid, ids, None
    )

    results = all_at_once([overlapping_pass] * 2)

    assert len(results) == 2  # both passes came back
    assert sorted(u for r in results for u in r.merged) == sorted(ids)
    row = report_row(pipeline, commitid)
    assert sorted(merged_ids(pipeline, commitid)) == sorted(ids) and row.version == 1
    expected = expected_totals([job_hits(job, files=3, lines=20) for job in range(20)])
    assert row.totals["hits"] == expected["hits"] and row.totals["lines"] == expected["lines"]


def as_list(value: object) -> list[object] | None:
    """A list sent as one JSON value (SQLite: a string; psycopg: a ``Json`` wrapper)."""
    if isinstance(value, str) and value.startswith("["):
        return list(json.loads(value))
    inner = getattr(value, "obj", None)
    return inner if isinstance(inner, list) else None


def test_a_merge_pass_writes_only_its_own_batch_not_the_commits_growing_list(
    pipeline: Pipeline,
) -> None:
    services = Services.from_settings(
        pipeline.services.settings.model_copy(update={"merge_batch_size": 2}),
        redis_client=pipeline.services.redis,
    )
    repoid, commitid, ids = processed_commit(Pipeline(services), 30)
    longest: list[int] = []

    def watch(conn: object, cursor: object, statement: str, params: object, *args: object) -> None:
        values = params.values() if isinstance(params, dict) else params or ()
        lists = [as_list(v) for v in values]  # type: ignore[union-attr]
        longest.append(max((len(v) for v in lists if v is not None), default=0))

    sa.event.listen(services.engine, "before_cursor_execute", watch)
    try:
        outcome = finisher_module.finish_commit(
            services, repoid, commitid, send_notify=lambda r, c: None, send_processor=print
        )
    finally:
        sa.event.remove(services.engine, "before_cursor_execute", watch)

    assert outcome.merge_passes == 15 and sorted(outcome.merged) == sorted(ids)
    assert max(longest) <= 2  # never the commit's whole list, rewritten per pass
    assert sorted(merged_ids(pipeline, commitid)) == sorted(ids)


# -- the steps of a merge pass, alone (no Redis, no database) -------------------------


def test_classify_merges_the_processed_re_drives_those_in_flight_and_drops_the_rest() -> None:
    states = {
        1: UploadState.PROCESSED,
        2: UploadState.PROCESSING,
        3: UploadState.MERGED,
        4: UploadState.UPLOADED,
        5: UploadState.ERROR,
        7: UploadState.PROCESSED,
    }
    sorted_ids = finisher_module.classify([7, 1, 2, 3, 4, 5, 6], states)
    assert sorted_ids.eligible == [7, 1]  # in the order of the processed set
    assert sorted_ids.redrive == [2, 4]
    assert sorted_ids.done == [3, 5, 6]  # 6 has no row: unknown, it leaves the set


def test_classify_of_nothing_processed_merges_nothing() -> None:
    sorted_ids = finisher_module.classify([1, 2], {})
    assert (sorted_ids.eligible, sorted_ids.redrive, sorted_ids.done) == ([], [], [1, 2])


def test_merge_adds_each_readable_intermediate_and_reports_the_lost_ones() -> None:
    def blob(hits: int) -> bytes:
        return codec.dump(Report({"a.py": FileCoverage(lines={1: hits, 2: 0})}))

    blobs = {1: blob(2), 2: None, 3: b"not a report", 4: blob(3)}
    loaded: list[list[int]] = []
    seen: list[int] = []
    renewals: list[int] = []

    def load(chunk: list[int]) -> list[bytes | None]:
        loaded.append(chunk)
        return [blobs[u] for u in chunk]

    merged = finisher_module.merge(
        [1, 2, 3, 4],
        load,
        Accumulator(),
        each=lambda upload_id, part: seen.append(upload_id),
        renew=lambda: renewals.append(1),
    )
    assert merged.merged == [1, 4] and seen == [1, 4]
    assert merged.lost == [2, 3]
    assert merged.report.to_report().files["a.py"].lines == {1: 5, 2: 0}
    assert loaded == [[1, 2, 3, 4]] and renewals == [1]  # one chunk, one renewal


def test_a_pass_of_several_uploads_holds_one_decoded_upload_at_a_time() -> None:
    # Uploads of the same lines: the merged report keeps the first one's line
    # numbers, so what a pass holds beyond it is the upload being merged.
    reports = [parse_report(monorepo_lcov(job, files=200, lines=50)) for job in range(4)]
    blobs = [codec.dump(r) for r in reports]

    def traced_peak(ids: list[int]) -> int:
        tracemalloc.start()
        try:
            finisher_module.merge(ids, lambda chunk: [blobs[u] for u in chunk], Accumulator())
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    one, four = traced_peak([0]), traced_peak([0, 1, 2, 3])
    # Beyond one upload's: the merged hits being built beside the upload
    # merged (1.5x in all). Holding the previous upload while decoding the
    # next would cost a whole upload more (1.9x).
    assert four < 1.75 * one, (one, four)


def test_merge_loads_and_renews_the_lock_once_per_chunk() -> None:
    ids = list(range(finisher_module.LOAD_CHUNK * 2 + 1))
    loaded: list[int] = []
    renewals: list[int] = []

    def load(chunk: list[int]) -> list[bytes | None]:
        loaded.append(len(chunk))
        return [None] * len(chunk)

    merged = finisher_module.merge(ids, load, Accumulator(), renew=lambda: renewals.append(1))
    assert loaded == [finisher_module.LOAD_CHUNK, finisher_module.LOAD_CHUNK, 1]
    assert len(renewals) == 3
    assert merged.merged == [] and merged.lost == ids


@pytest.mark.parametrize(
    ("last_run_ms", "factor", "window"),
    [(0, 3.0, 250), (50, 3.0, 250), (400, 3.0, 1200), (5000, 3.0, 2000), (400, 0.0, 250)],
)
def test_a_commits_debounce_window_follows_its_last_run_within_its_bounds(
    last_run_ms: int, factor: float, window: int
) -> None:
    from app.pipeline.finisher import debounce_ms
    from app.settings import Settings

    settings = Settings(
        finisher_debounce_ms=250, finisher_debounce_factor=factor, finisher_debounce_max_ms=2000
    )
    assert debounce_ms(settings, last_run_ms) == window
