"""sweep: Postgres holds the truth, so lost Redis state is rebuilt from it."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from app.db.models import CommitReport, Notification, Upload, UploadState, merged_upload_ids
from tests.support.pipeline import Pipeline
from tests.support.synthetic import ci_matrix

pytestmark = pytest.mark.timeout(60)


def drain(pipeline: Pipeline) -> None:
    """Deliver what the steps sent until nothing is left, like a worker would."""
    box = pipeline.outbox
    while box.processor or box.finisher:
        while box.processor:
            pipeline.process(box.processor.pop(0))
        while box.finisher:
            pipeline.finish(*box.finisher.pop(0))
    while box.notify:
        pipeline.notify(*box.notify.pop(0))


def test_uploads_stuck_at_every_stage_end_merged_once_after_redis_lost_its_data(
    pipeline: Pipeline,
) -> None:
    accepted = pipeline.upload(ci_matrix(9, files=2, lines=10))
    ids = accepted.upload_ids
    for u in ids[3:]:  # three never start (uploaded); six are processed, unmerged
        pipeline.process(u)
    pipeline.outbox.finisher.clear()  # the worker died before the finishers ran
    pipeline.lose_redis_state()

    result = pipeline.sweep(older_than_s=0)
    drain(pipeline)

    assert sorted(result.reprocessed) == sorted(ids)
    with pipeline.services.sessions() as session:
        assert set(session.scalars(sa.select(Upload.state).where(Upload.id.in_(ids)))) == {
            UploadState.MERGED
        }
        row = session.scalar(
            sa.select(CommitReport).where(CommitReport.commit_id == accepted.commitid)
        )
        assert row is not None
        assert sorted(merged_upload_ids(session, accepted.commitid)) == sorted(ids)
        assert session.scalar(sa.select(sa.func.count()).select_from(Notification)) == 1


def test_a_processed_upload_whose_intermediate_survived_goes_straight_to_the_finisher(
    pipeline: Pipeline,
) -> None:
    accepted = pipeline.upload(ci_matrix(2, files=1, lines=5))
    for u in accepted.upload_ids:
        pipeline.process(u)
    keys = pipeline.services.state.keys(accepted.repoid, accepted.commitid)
    pipeline.services.redis.delete(keys.processed)  # the set is lost, the reports are not
    pipeline.outbox.finisher.clear()

    result = pipeline.sweep(older_than_s=0)

    assert sorted(result.refinished) == sorted(accepted.upload_ids)
    assert pipeline.outbox.processor == []
    assert pipeline.outbox.finisher == [(accepted.repoid, accepted.commitid)]
    drain(pipeline)
    with pipeline.services.sessions() as session:
        states = set(session.scalars(sa.select(Upload.state)))
    assert states == {UploadState.MERGED}


def test_a_settled_commit_that_missed_its_notify_is_notified_by_the_sweep(
    pipeline: Pipeline,
) -> None:
    settled = pipeline.settle(2)
    pipeline.outbox.notify.clear()  # the worker died before notify ran

    result = pipeline.sweep(older_than_s=0)
    drain(pipeline)

    assert result.renotified == [settled]
    with pipeline.services.sessions() as session:
        assert session.scalar(sa.select(sa.func.count()).select_from(Notification)) == 1
    assert pipeline.sweep(older_than_s=0).renotified == []


def test_a_fresh_upload_is_left_alone_by_the_sweep(pipeline: Pipeline) -> None:
    pipeline.upload(ci_matrix(1, files=1, lines=5))
    result = pipeline.sweep(older_than_s=3600)
    assert result.reprocessed == [] and pipeline.outbox.processor == []


def test_after_redis_lost_its_data_a_default_sweep_re_drives_everything_in_flight_at_once(
    pipeline: Pipeline,
) -> None:
    assert not pipeline.sweep().redis_lost  # the first epoch marker: no loss
    accepted = pipeline.upload(ci_matrix(6, files=1, lines=5))
    ids = accepted.upload_ids
    for u in ids[:4]:
        pipeline.process(u)
    pipeline.finish(accepted.repoid, accepted.commitid)  # four merged (version 1)
    more = pipeline.upload(ci_matrix(9, files=1, lines=5)[6:])
    for u in more.upload_ids[:2]:
        pipeline.process(u)  # processed, not merged; ids[4:] and the last never started
    assert pipeline.sweep().reprocessed == []  # nothing is old enough
    pipeline.lose_redis_state()
    pipeline.outbox.processor.clear()
    pipeline.outbox.finisher.clear()
    pipeline.outbox.notify.clear()

    result = pipeline.sweep()

    in_flight = [*ids[4:], *more.upload_ids]
    assert result.redis_lost and sorted(result.reprocessed) == sorted(in_flight)
    assert not pipeline.sweep().redis_lost  # one sweep recovers, once
    drain(pipeline)
    with pipeline.services.sessions() as session:
        states = set(session.scalars(sa.select(Upload.state)))
        versions = list(session.scalars(sa.select(Notification.report_version)))
    assert states == {UploadState.MERGED} and versions == [2]


@pytest.mark.integration
def test_the_sweep_holds_no_row_lock_while_it_talks_to_redis(
    real_pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    pipeline = real_pipeline
    accepted = pipeline.upload(ci_matrix(4, files=1, lines=5))
    for u in accepted.upload_ids[:2]:
        pipeline.process(u)
    state = pipeline.services.state
    locked_during_redis_calls: list[str] = []

    def row_locks_held(call: str) -> None:
        # Another connection tries every upload row without waiting.
        with pipeline.services.engine.connect() as other:
            try:
                other.execute(sa.text("SELECT id FROM uploads FOR UPDATE NOWAIT"))
            except sa.exc.OperationalError:
                locked_during_redis_calls.append(call)
            other.rollback()

    for name in ("intermediates_exist", "mark_processed", "mark_processing"):
        real = getattr(state, name)

        def spy(*args: object, _name: str = name, _real: object = real) -> object:
            row_locks_held(_name)
            return _real(*args)  # type: ignore[operator]

        monkeypatch.setattr(state, name, spy)

    result = pipeline.sweep(older_than_s=0)

    assert len(result.reprocessed) + len(result.refinished) == 4
    assert locked_during_redis_calls == []


def test_a_re_driven_matrix_goes_to_the_shared_queue_up_to_its_share_and_the_rest_to_bulk(
    pipeline: Pipeline,
) -> None:
    assert not pipeline.sweep().redis_lost  # the first epoch marker
    share = pipeline.services.settings.processor_share
    accepted = pipeline.upload(ci_matrix(share + 4, files=1, lines=5))
    pipeline.lose_redis_state()

    result = pipeline.sweep()

    assert result.redis_lost and sorted(result.reprocessed) == accepted.upload_ids
    assert sorted(pipeline.outbox.processor) == accepted.upload_ids
    assert len(pipeline.outbox.bulk) == 4  # beyond the commit's share
    drain(pipeline)
    with pipeline.services.sessions() as session:
        assert set(session.scalars(sa.select(Upload.state))) == {UploadState.MERGED}
