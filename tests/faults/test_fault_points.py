"""The fault-injection hook itself: parsed once, validated at start-up, inert unless armed."""

from __future__ import annotations

import time

import pytest

from app.errors import ConfigurationError
from app.faults import MERGE_COMMITTED, MERGE_LOCKED, Fault, FaultPoints
from app.settings import Settings

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
        Settings(fault_points=spec)


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
    assert Settings().fault_points == ""
