"""Every upload ends merged or failed, and every settled state is notified once.

Each test drives the production steps on fakeredis + SQLite and on real
Redis + PostgreSQL (the ``pipeline`` fixture), and stages one way an upload or
a commit used to get stuck, or settle without anyone being told.
"""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from app.db.models import Notification, Upload, UploadState
from app.recovery import sweeper
from tests.support.payloads import LCOV, LONG_FIX_LINE, NESTED_V1, NUL_NAMED_V1
from tests.support.pipeline import Pipeline
from tests.support.synthetic import ci_matrix

pytestmark = pytest.mark.timeout(120)

BAD_REPORT = ("bad.txt", b"not a coverage report\n")


#: Payloads whose decoding raised something other than a ``ReportError``, or
#: whose error PostgreSQL refused to store; each, and what its reason names.
POISON = {
    "deeply nested v1 JSON": ("v1", NESTED_V1, "nested too deeply"),
    "a legacy fix line of 5,000 digits": ("legacy", LONG_FIX_LINE, "more than 9 digits"),
    "a coverage file named with a NUL byte": ("v1", NUL_NAMED_V1, "bad\\x00name.xml"),
}


def upload_payload(pipeline: Pipeline, kind: str, raw: bytes) -> tuple[int, int, int]:
    """An uploader's payload stored as the HTTP API stores it; (repo, commit, upload)."""
    accepted = pipeline.upload([("payload", raw)])
    with pipeline.services.sessions.begin() as session:
        session.execute(
            sa.update(Upload).where(Upload.id == accepted.upload_ids[0]).values(payload_format=kind)
        )
    return accepted.repoid, accepted.commitid, accepted.upload_ids[0]


def upload_row(pipeline: Pipeline, upload_id: int) -> Upload:
    with pipeline.services.sessions() as session:
        row = session.get(Upload, upload_id)
        assert row is not None
        return row


def notifications(pipeline: Pipeline, commitid: int) -> list[tuple[int, int, int]]:
    """(report version, merged, failed) of each notification of the commit."""
    with pipeline.services.sessions() as session:
        return sorted(
            (n.report_version, n.uploads_merged, n.uploads_errored)
            for n in session.scalars(
                sa.select(Notification).where(Notification.commit_id == commitid)
            )
        )


def deliver(pipeline: Pipeline) -> None:
    """Run what the steps sent until nothing is left, as a worker would."""
    box = pipeline.outbox
    while box.processor or box.finisher or box.finisher_ahead or box.notify:
        while box.processor:
            pipeline.process(box.processor.pop(0))
        while box.finisher or box.finisher_ahead:
            pipeline.finish(*(box.finisher or box.finisher_ahead).pop(0))
        while box.notify:
            pipeline.notify(*box.notify.pop(0))


# -- poison payloads ------------------------------------------------------------------


@pytest.mark.parametrize("case", POISON, ids=list(POISON))
def test_a_poison_payload_ends_its_upload_in_error_once_with_a_reason(
    pipeline: Pipeline, case: str
) -> None:
    kind, raw, named = POISON[case]
    repoid, commitid, upload_id = upload_payload(pipeline, kind, raw)

    assert pipeline.process(upload_id) == UploadState.ERROR
    assert pipeline.process(upload_id) == UploadState.ERROR  # a redelivery changes nothing

    row = upload_row(pipeline, upload_id)
    assert row.state == UploadState.ERROR and named in (row.error or "")
    assert "\x00" not in (row.error or "")
    deliver(pipeline)
    assert notifications(pipeline, commitid) == [(0, 0, 1)]
    assert pipeline.services.state.counts(repoid, commitid) == (0, 0)


def test_any_exception_a_parser_raises_fails_the_upload_naming_it(
    pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.pipeline import processor

    def a_parser_bug(*args: object, **kwargs: object) -> object:
        raise KeyError("lines")

    monkeypatch.setattr(processor, "report_intermediate", a_parser_bug)
    accepted = pipeline.upload([("a.info", LCOV)])

    assert pipeline.process(accepted.upload_ids[0]) == UploadState.ERROR
    assert upload_row(pipeline, accepted.upload_ids[0]).error == (
        "the payload could not be read (KeyError: 'lines')"
    )


def test_the_sweeps_re_drives_of_an_upload_whose_processor_never_finishes_are_bounded(
    pipeline: Pipeline,
) -> None:
    bound = pipeline.services.settings.max_redrives
    accepted = pipeline.upload([("a.info", LCOV)])
    repoid, commitid, upload_id = accepted.repoid, accepted.commitid, accepted.upload_ids[0]
    pipeline.sweep()  # the epoch marker is set: no recovery below
    with pipeline.services.sessions.begin() as session:  # its processor dies every time
        session.execute(
            sa.update(Upload).where(Upload.id == upload_id).values(state=UploadState.PROCESSING)
        )

    redriven = [pipeline.sweep(older_than_s=0).reprocessed for _ in range(bound)]
    last = pipeline.sweep(older_than_s=0)

    assert redriven == [[upload_id]] * bound
    assert last.reprocessed == [] and last.given_up == [upload_id]
    row = upload_row(pipeline, upload_id)
    assert row.state == UploadState.ERROR and f"re-driven {bound} times" in (row.error or "")
    assert pipeline.outbox.notify == [(repoid, commitid)]
    pipeline.outbox.processor.clear()
    deliver(pipeline)
    assert notifications(pipeline, commitid) == [(0, 0, 1)]
    assert pipeline.sweep(older_than_s=0).reprocessed == []


def test_a_processed_upload_waiting_for_its_batch_is_merged_once_the_one_it_waited_for_gives_up(
    pipeline: Pipeline,
) -> None:
    pipeline.services.state.min_batch = 2  # COVWORKER_FINISHER_MIN_BATCH
    bound = pipeline.services.settings.max_redrives
    accepted = pipeline.upload([("a.info", LCOV), ("b.info", LCOV)])
    repoid, commitid, (waiting, stuck) = accepted.repoid, accepted.commitid, accepted.upload_ids
    pipeline.sweep()  # the epoch marker is set: no recovery below
    assert pipeline.process(waiting) == UploadState.PROCESSED
    assert pipeline.finish(repoid, commitid).batch_wait  # one processed, one still processing
    pipeline.outbox.finisher.clear()
    with pipeline.services.sessions.begin() as session:  # its processor dies every time
        session.execute(
            sa.update(Upload).where(Upload.id == stuck).values(state=UploadState.PROCESSING)
        )

    for _ in range(bound):
        pipeline.sweep(older_than_s=0)
    assert pipeline.sweep(older_than_s=0).given_up == [stuck]

    # The waiting upload is as old as the stuck one: the sweep finishes its commit again.
    assert (repoid, commitid) in pipeline.outbox.finisher
    pipeline.outbox.processor.clear()
    deliver(pipeline)
    assert upload_row(pipeline, waiting).state == UploadState.MERGED
    assert notifications(pipeline, commitid) == [(1, 1, 1)]


# -- commits that settle un-notified ----------------------------------------------------


def test_a_commit_whose_uploads_all_failed_is_notified_by_the_sweep_if_its_finisher_was_lost(
    pipeline: Pipeline,
) -> None:
    accepted = pipeline.upload([BAD_REPORT, BAD_REPORT])
    for upload_id in accepted.upload_ids:
        assert pipeline.process(upload_id) == UploadState.ERROR
    pipeline.outbox.finisher.clear()  # the worker died before its finisher ran

    result = pipeline.sweep(older_than_s=0)
    deliver(pipeline)

    assert result.renotified == [(accepted.repoid, accepted.commitid)]
    assert notifications(pipeline, accepted.commitid) == [(0, 0, 2)]
    assert pipeline.sweep(older_than_s=0).renotified == []


def test_a_retried_processor_of_an_upload_already_failed_sends_its_finisher(
    pipeline: Pipeline,
) -> None:
    accepted = pipeline.upload([BAD_REPORT])
    upload_id = accepted.upload_ids[0]
    assert pipeline.process(upload_id) == UploadState.ERROR
    pipeline.outbox.finisher.clear()  # died after committing error, before the finisher

    assert pipeline.process(upload_id) == UploadState.ERROR  # Dramatiq's retry

    assert pipeline.outbox.finisher == [(accepted.repoid, accepted.commitid)]
    deliver(pipeline)
    assert notifications(pipeline, accepted.commitid) == [(0, 0, 1)]


def test_an_upload_failing_after_its_commit_was_notified_is_notified(pipeline: Pipeline) -> None:
    first = pipeline.upload(ci_matrix(1, files=1, lines=5))
    pipeline.process(first.upload_ids[0])
    deliver(pipeline)
    assert notifications(pipeline, first.commitid) == [(1, 1, 0)]

    late = pipeline.upload([BAD_REPORT])  # a slow second job's upload does not parse
    assert pipeline.process(late.upload_ids[0]) == UploadState.ERROR
    deliver(pipeline)

    assert notifications(pipeline, first.commitid) == [(1, 1, 0), (1, 1, 1)]
    pipeline.finish(first.repoid, first.commitid)  # a later finisher notifies nothing more
    deliver(pipeline)
    assert notifications(pipeline, first.commitid) == [(1, 1, 0), (1, 1, 1)]


def test_a_stale_notified_marker_and_version_key_after_partial_redis_loss_suppress_nothing(
    pipeline: Pipeline,
) -> None:
    accepted = pipeline.upload(ci_matrix(1, files=1, lines=5))
    repoid, commitid = accepted.repoid, accepted.commitid
    pipeline.process(accepted.upload_ids[0])
    deliver(pipeline)  # version 1 notified: marker 1, version key 1
    keys = pipeline.services.state.keys(repoid, commitid)
    client = pipeline.services.redis
    kept = {key: client.get(key) for key in (keys.notified, keys.version)}
    more = pipeline.upload([ci_matrix(2, files=1, lines=5)[1]])
    pipeline.process(more.upload_ids[0])
    pipeline.finish(repoid, commitid)  # version 2 merged; its notify message is lost
    pipeline.outbox.notify.clear()
    for key, value in kept.items():  # Redis comes back without its last second of writes
        assert value is not None
        client.set(key, value)

    outcome = pipeline.finish(repoid, commitid)  # the next finisher of the commit

    assert outcome.notified and pipeline.outbox.notify == [(repoid, commitid)]
    deliver(pipeline)
    assert notifications(pipeline, commitid) == [(1, 1, 0), (2, 2, 0)]


# -- Redis losing its data --------------------------------------------------------------


def test_redis_emptied_before_any_worker_ran_is_recovered_by_the_first_epoch_marker(
    pipeline: Pipeline,
) -> None:
    accepted = pipeline.upload(ci_matrix(4, files=1, lines=5))  # stored, nothing ran yet
    pipeline.lose_redis_state()  # Redis restarted without persistence

    result = pipeline.sweep()  # a worker's first look: default age

    assert result.first_epoch and not result.redis_lost
    assert sorted(result.reprocessed) == sorted(accepted.upload_ids)
    deliver(pipeline)
    assert notifications(pipeline, accepted.commitid) == [(1, 4, 0)]


def test_the_first_epoch_marker_leaves_alone_the_uploads_redis_still_knows(
    pipeline: Pipeline,
) -> None:
    pipeline.upload(ci_matrix(3, files=1, lines=5))  # in the processing set, messages queued

    result = pipeline.sweep()

    assert result.first_epoch and result.reprocessed == [] and pipeline.outbox.processor == []


def test_redis_loss_recovery_drains_everything_in_flight_in_pages(
    pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sweeper, "SWEEP_BATCH", 3)
    monkeypatch.setattr(sweeper, "SWEEP_PAGE", 2)
    pipeline.sweep()  # the first marker
    accepted = pipeline.upload(ci_matrix(11, files=1, lines=5))
    pipeline.lose_redis_state()

    result = pipeline.sweep()

    assert result.redis_lost and sorted(result.reprocessed) == sorted(accepted.upload_ids)
    deliver(pipeline)
    assert notifications(pipeline, accepted.commitid) == [(1, 11, 0)]
