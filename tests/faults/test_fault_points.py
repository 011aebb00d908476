"""The fault points: parsed once, validated at start-up, inert unless armed, and
reached by a real merge through the events the test worker app installs."""

from __future__ import annotations

import time

import pytest
import sqlalchemy as sa

from app.db.models import Upload
from app.errors import ConfigurationError
from tests.support.faults.points import (
    MERGE_COMMITTED,
    MERGE_IN_TRANSACTION,
    MERGE_LOCKED,
    Fault,
    FaultPoints,
    install,
)
from tests.support.pipeline import Pipeline, real_services
from tests.support.synthetic import ci_matrix

pytestmark = pytest.mark.timeout(30)


def test_a_spec_arms_each_named_point_with_its_action_and_hit() -> None:
    faults = FaultPoints.parse("merge.locked=kill@2, merge.committed=sleep:0.5")
    assert faults.faults == {
        MERGE_LOCKED: Fault("kill", 0.0, 2),
        MERGE_COMMITTED: Fault("sleep", 0.5, None),
    }


@pytest.mark.parametrize(
    "spec", ["merge.nowhere=kill", "merge.locked=explode", "merge.locked=kill@x", "merge.locked"]
)
def test_a_bad_spec_stops_the_worker_at_start_up(spec: str) -> None:
    with pytest.raises(ConfigurationError, match="fault point"):
        FaultPoints.parse(spec)  # what tests.support.faults.worker_app does at import


def test_only_the_nth_hit_fires(monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)
    faults = FaultPoints.parse("merge.committed=sleep:2@3")
    for _ in range(5):
        faults.hit(MERGE_COMMITTED)
        faults.hit(MERGE_LOCKED)  # not armed: nothing
    assert slept == [2.0]


def test_no_spec_arms_nothing() -> None:
    assert FaultPoints.parse("").faults == {}


class Recording(FaultPoints):
    """Fault points that record each hit and what the database held at that moment."""

    def __init__(self, pipeline: Pipeline) -> None:
        armed = Fault("sleep", 0.0)
        super().__init__({p: armed for p in (MERGE_LOCKED, MERGE_IN_TRANSACTION, MERGE_COMMITTED)})
        self.pipeline = pipeline
        self.hits: list[tuple[str, int]] = []

    def hit(self, point: str) -> None:
        with self.pipeline.services.sessions() as session:  # another connection: committed only
            merged = session.scalar(
                sa.select(sa.func.count()).select_from(Upload).where(Upload.state == "merged")
            )
        self.hits.append((point, int(merged or 0)))


@pytest.mark.integration
def test_a_real_merge_reaches_each_point_once_per_pass_at_its_moment(
    redis_url: str, pg_url: str, namespace: str
) -> None:
    services = real_services(redis_url, pg_url, namespace, merge_batch_size=2)
    pipeline = Pipeline(services)
    faults = Recording(pipeline)
    install(services, faults)
    accepted = pipeline.upload(ci_matrix(3, files=2, lines=5))
    for upload_id in accepted.upload_ids:
        pipeline.process(upload_id)
    pipeline.finish(accepted.repoid, accepted.commitid)
    services.close()
    assert faults.hits == [
        (MERGE_LOCKED, 0),
        (MERGE_IN_TRANSACTION, 0),  # flipped to merged, not yet visible: not committed
        (MERGE_COMMITTED, 2),
        (MERGE_LOCKED, 2),
        (MERGE_IN_TRANSACTION, 2),
        (MERGE_COMMITTED, 3),
    ]
