"""Paths that used to wait for the age-based sweep, or for ever: each heals at once."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from app.db.models import Notification, Upload, UploadState
from tests.support.pipeline import Pipeline
from tests.support.synthetic import ci_matrix

pytestmark = pytest.mark.timeout(120)

BAD_REPORT = ("bad.txt", b"not a coverage report\n")


def upload_row(pipeline: Pipeline, upload_id: int) -> Upload:
    with pipeline.services.sessions() as session:
        row = session.get(Upload, upload_id)
        assert row is not None
        return row


def notified_versions(pipeline: Pipeline, commitid: int) -> list[int]:
    with pipeline.services.sessions() as session:
        return sorted(
            session.scalars(
                sa.select(Notification.report_version).where(Notification.commit_id == commitid)
            )
        )


def test_a_stale_notified_marker_does_not_suppress_a_new_versions_notification(
    pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = pipeline.services.state
    first = pipeline.upload(ci_matrix(1, files=1, lines=5))
    repoid, commitid = first.repoid, first.commitid
    pipeline.process(first.upload_ids[0])
    pipeline.finish(repoid, commitid)  # version 1, settled
    late: list[int] = []
    write_marker = state.mark_notified

    def v2_merges_before_the_v1_marker_is_written(r: int, c: int, version: int) -> None:
        # notify of v1 has read its version; meanwhile two more uploads arrive,
        # one merges (v2, the marker is deleted), the other is still parsing.
        more = pipeline.upload([ci_matrix(2, files=1, lines=5)[1], BAD_REPORT])
        pipeline.process(more.upload_ids[0])
        pipeline.finish(repoid, commitid)
        late.append(more.upload_ids[1])
        write_marker(r, c, version)  # the v1 notify now writes its marker

    monkeypatch.setattr(state, "mark_notified", v2_merges_before_the_v1_marker_is_written)
    assert pipeline.notify(repoid, commitid).version == 1
    monkeypatch.undo()
    pipeline.outbox.notify.clear()

    assert pipeline.process(late[0]) == UploadState.ERROR  # the last upload fails to parse
    pipeline.finish(repoid, commitid)

    assert pipeline.outbox.notify == [(repoid, commitid)]  # v2 is notified
    assert pipeline.notify(repoid, commitid).version == 2
    assert notified_versions(pipeline, commitid) == [1, 2]


def test_a_redelivered_processor_puts_back_an_upload_whose_redis_state_was_lost(
    pipeline: Pipeline,
) -> None:
    accepted = pipeline.upload(ci_matrix(1, files=1, lines=5))
    repoid, commitid, upload_id = accepted.repoid, accepted.commitid, accepted.upload_ids[0]
    assert pipeline.process(upload_id) == UploadState.PROCESSED
    keys = pipeline.services.state.keys(repoid, commitid)
    pipeline.services.redis.delete(keys.processed, keys.report(upload_id))  # Redis lost it
    pipeline.outbox.finisher.clear()

    assert pipeline.process(upload_id) == UploadState.PROCESSED  # the redelivered message

    assert pipeline.services.state.counts(repoid, commitid) == (0, 1)
    assert pipeline.services.state.has_intermediate(repoid, commitid, upload_id)
    assert pipeline.outbox.finisher == [(repoid, commitid)]
    pipeline.finish(repoid, commitid)
    assert upload_row(pipeline, upload_id).state == UploadState.MERGED


def test_an_intermediate_lost_every_time_ends_the_upload_in_error_after_a_bound(
    pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = pipeline.services.state
    accepted = pipeline.upload(ci_matrix(2, files=1, lines=5))
    repoid, commitid = accepted.repoid, accepted.commitid
    good, evicted = accepted.upload_ids
    pipeline.process(good)
    # Redis evicts this upload's intermediate (maxmemory) every time it is stored.
    store = state.store_intermediate
    monkeypatch.setattr(
        state,
        "store_intermediate",
        lambda r, c, u, data: None if u == evicted else store(r, c, u, data),
    )
    pipeline.process(evicted)

    rounds = 0
    while rounds < 50 and upload_row(pipeline, evicted).state != UploadState.ERROR:
        rounds += 1
        pipeline.finish(repoid, commitid)
        while pipeline.outbox.processor:
            pipeline.process(pipeline.outbox.processor.pop(0))

    bound = pipeline.services.settings.max_redrives
    assert rounds == bound + 1
    row = upload_row(pipeline, evicted)
    assert row.state == UploadState.ERROR
    assert row.error and f"re-driven {bound} times" in row.error
    assert upload_row(pipeline, good).state == UploadState.MERGED
    pipeline.finish(repoid, commitid)
    assert pipeline.services.state.counts(repoid, commitid) == (0, 0)
    assert (repoid, commitid) in pipeline.outbox.notify
