"""The feedback's rows: a version's prepare row made once, made pending again
only when asked, a pending row only while uploads are in flight."""

from __future__ import annotations

from datetime import timedelta

import sqlalchemy as sa

from app.db.models import PullDelivery, utcnow
from app.db.pull_deliveries import PENDING, PENDING_STATUSES, PREPARE, SENT
from app.feedback import rows
from tests.support.pipeline import Pipeline

REPO, SHA = "acme/rows", "9" * 40


def prepare_rows(pipeline: Pipeline, commit_id: int) -> list[PullDelivery]:
    with pipeline.services.sessions() as session:
        return list(
            session.scalars(
                sa.select(PullDelivery).where(
                    PullDelivery.commit_id == commit_id, PullDelivery.target == PREPARE
                )
            )
        )


def test_a_versions_prepare_row_is_made_once_and_pending_again_only_when_asked(
    pipeline: Pipeline,
) -> None:
    _, commit_id = pipeline.settle(2, repo=REPO, sha=SHA)
    first = rows.enqueue_prepare(pipeline.services, commit_id, 1)
    assert first is not None
    assert rows.enqueue_prepare(pipeline.services, commit_id, 1) == first  # still pending
    [row] = prepare_rows(pipeline, commit_id)
    assert (row.state, row.payload) == (PENDING, {"uploads": 2})
    with pipeline.services.sessions.begin() as session:
        rows.finish(session, first, SENT, None)
        assert rows.arm_prepare(session, commit_id, 1, 2, again=False) is None
        assert rows.arm_prepare(session, commit_id, 1, 3, again=True) == first
    [row] = prepare_rows(pipeline, commit_id)
    assert (row.state, row.payload["uploads"], row.attempts) == (PENDING, 3, 0)


def test_no_pending_row_while_nothing_is_in_flight(pipeline: Pipeline) -> None:
    _, commit_id = pipeline.settle(1, repo=REPO, sha=SHA)
    assert rows.enqueue_pending(pipeline.services, commit_id) is None
    with pipeline.services.sessions() as session:
        assert rows.uploads_known(session, commit_id) == (1, 0)
        targets = session.scalars(
            sa.select(PullDelivery.target).where(PullDelivery.commit_id == commit_id)
        ).all()
    assert PENDING_STATUSES not in targets


def test_a_version_settled_within_the_spacing_of_the_one_before_waits_out_the_rest(
    pipeline: Pipeline,
) -> None:
    _, commit_id = pipeline.settle(2, repo=REPO, sha=SHA)
    with pipeline.services.sessions.begin() as session:
        first = rows.arm_prepare(session, commit_id, 1, 1, again=True)
        assert first is not None
        assert rows.space_prepare(session, first, commit_id, 1, 3.0) == 0.0  # the first: now
        second = rows.arm_prepare(session, commit_id, 2, 2, again=True)
        assert second is not None
        assert rows.space_prepare(session, second, commit_id, 2, 0.0) == 0.0  # spacing off
        waits = rows.space_prepare(session, second, commit_id, 2, 3.0)
    assert 2.0 < waits <= 3.0
    by_version = {row.report_version: row for row in prepare_rows(pipeline, commit_id)}
    assert by_version[1].next_at is None and by_version[2].next_at is not None


def test_a_version_settled_after_the_spacing_of_the_one_before_is_due_at_once(
    pipeline: Pipeline,
) -> None:
    _, commit_id = pipeline.settle(2, repo=REPO, sha=SHA)
    with pipeline.services.sessions.begin() as session:
        first = rows.arm_prepare(session, commit_id, 1, 1, again=True)
        session.execute(
            sa.update(PullDelivery)
            .where(PullDelivery.id == first)
            .values(created_at=utcnow() - timedelta(seconds=5))
        )
        second = rows.arm_prepare(session, commit_id, 2, 2, again=True)
        assert second is not None
        assert rows.space_prepare(session, second, commit_id, 2, 3.0) == 0.0
