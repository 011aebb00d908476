"""Redis Cluster helpers, without a cluster: hash tags for a slot, riding through a
failover, and the per-shard owner markers. (On a real cluster, across its shards
and a failover: ``tests/scale/``.)"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import fakeredis
import pytest
from redis.cluster import RedisCluster
from redis.crc import key_slot
from redis.exceptions import ClusterDownError, ConnectionError, ResponseError

import app.runtime.cluster
from app.runtime.cluster import (
    CLUSTER_BACKOFF_CAP_S,
    RIDE_THROUGH_S,
    FailoverRidingCluster,
    SlotOwnerEpochs,
    tag_for_slot,
)


def test_a_tag_lands_on_the_slot_it_was_found_for() -> None:
    for slot in (0, 5461, 10923, 16383):
        assert key_slot(f"x:{{{tag_for_slot(slot)}}}:y".encode()) == slot


class FakeClock:
    """``time`` for ``app.runtime.cluster``: sleeping moves it, nothing waits."""

    def __init__(self) -> None:
        self.now = 0.0
        self.pauses: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.pauses.append(seconds)
        self.now += seconds


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    clock = FakeClock()
    monkeypatch.setattr(app.runtime.cluster, "time", clock)
    return clock


def riding(monkeypatch: pytest.MonkeyPatch, answers: list[Any]) -> FailoverRidingCluster:
    """A client whose underlying calls give ``answers`` in turn (an exception is raised)."""

    def execute(self: Any, *args: Any, **kwargs: Any) -> Any:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    monkeypatch.setattr(RedisCluster, "execute_command", execute)
    return object.__new__(FailoverRidingCluster)  # no nodes to connect to


def test_a_command_is_tried_again_with_growing_pauses_until_the_failover_is_over(
    monkeypatch: pytest.MonkeyPatch, clock: FakeClock
) -> None:
    down = [ConnectionError("gone")] * 6 + [ClusterDownError("CLUSTERDOWN")] * 2
    client = riding(monkeypatch, [*down, b"OK"])
    assert client.execute_command("SET", "k", "v") == b"OK"
    assert clock.pauses[:5] == [0.05, 0.1, 0.2, 0.4, 0.8]
    assert max(clock.pauses) == CLUSTER_BACKOFF_CAP_S
    assert len(clock.pauses) == len(down)


def test_a_failover_longer_than_the_ride_through_raises(
    monkeypatch: pytest.MonkeyPatch, clock: FakeClock
) -> None:
    client = riding(monkeypatch, [ConnectionError("gone")] * 1000)
    with pytest.raises(ConnectionError):
        client.execute_command("GET", "k")
    assert clock.now <= RIDE_THROUGH_S
    assert clock.now > RIDE_THROUGH_S - 2 * CLUSTER_BACKOFF_CAP_S


def test_an_error_that_is_no_failover_is_raised_at_once(
    monkeypatch: pytest.MonkeyPatch, clock: FakeClock
) -> None:
    client = riding(monkeypatch, [ResponseError("WRONGTYPE"), b"never"])
    with pytest.raises(ResponseError, match="WRONGTYPE"):
        client.execute_command("GET", "k")
    assert clock.pauses == []


SHARDS = {(0, 5460): "node-a", (5461, 10922): "node-b", (10923, 16383): "node-c"}


class FakeCluster:
    """What ``SlotOwnerEpochs`` asks of a cluster client, over one fakeredis server:
    the shards and the primary each slot's key is on."""

    def __init__(self, server: fakeredis.FakeServer) -> None:
        self.redis = fakeredis.FakeRedis(server=server)
        self.owners = dict(SHARDS)

    def cluster_slots(self) -> dict[tuple[int, int], Any]:
        return {slots: {"primary": owner} for slots, owner in self.owners.items()}

    def get(self, key: str) -> Any:
        return self.redis.get(key)

    def register_script(self, script: str) -> Any:
        return self.redis.register_script(script)

    def get_node_from_key(self, key: str) -> str:
        slot = key_slot(key.encode())
        return next(o for (a, b), o in self.owners.items() if a <= slot <= b)

    def execute_command(self, *args: Any, target_nodes: str) -> bytes:
        assert args == ("CLUSTER MYID",)
        return target_nodes.encode()

    def close(self) -> None:
        self.redis.close()


@pytest.fixture
def clients() -> Iterator[tuple[FakeCluster, FakeCluster]]:
    server = fakeredis.FakeServer()
    one, two = FakeCluster(server), FakeCluster(server)
    yield one, two
    one.close()
    two.close()


def epochs(client: FakeCluster) -> SlotOwnerEpochs:
    return SlotOwnerEpochs(client, lambda: "ns:i1")  # type: ignore[arg-type]


def test_each_shards_marker_is_on_a_slot_of_that_shard(
    clients: tuple[FakeCluster, FakeCluster],
) -> None:
    watch = epochs(clients[0])
    assert watch.shard_slots() == [0, 5461, 10923]
    for slot in watch.shard_slots():
        marker = watch.marker(slot)
        assert marker.startswith("ns:i1:owner-epoch:{")
        assert key_slot(marker.encode()) == slot


def test_a_shard_changing_hands_is_claimed_by_one_process_once(
    clients: tuple[FakeCluster, FakeCluster],
) -> None:
    one, two = clients
    watch, other = epochs(one), epochs(two)
    assert watch.changed() is True, "no markers yet: every shard is claimed"
    assert other.changed() is False and watch.changed() is False, "a steady cluster never"
    for client in clients:  # node-b's replica is promoted
        client.owners[(5461, 10922)] = "node-b-replica"
    assert other.changed() is True
    assert watch.changed() is False, "the other process claimed it already"
    assert one.get(watch.marker(5461)) == b"node-b-replica"


def test_a_shard_that_lost_its_marker_is_claimed_again(
    clients: tuple[FakeCluster, FakeCluster],
) -> None:
    one, _ = clients
    watch = epochs(one)
    watch.changed()
    one.redis.delete(watch.marker(10923))
    assert watch.changed() is True
    assert one.get(watch.marker(10923)) == b"node-c"
