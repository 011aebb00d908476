"""Every Lua script and MULTI of the pipeline state runs on a real Redis Cluster.

The commits are spread over every shard; a script or transaction whose keys
left one hash slot would fail with CROSSSLOT here, not on a single Redis.
"""

from __future__ import annotations

import pytest

from app.runtime.cluster import SlotOwnerEpochs, cluster_client
from app.runtime.state import ProcessingState
from tests.support.redis_cluster import RedisClusterNodes

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

COMMITS = [(repoid, 1000 + repoid) for repoid in range(1, 31)]


def test_every_script_and_transaction_of_the_state_runs_on_a_cluster_across_its_shards(
    cluster: RedisClusterNodes, namespace: str
) -> None:
    client = cluster_client(cluster.url)
    state = ProcessingState(client, namespace=namespace, instance="i1", lock_timeout_s=5)
    shards = {cluster.primary_of_key(state.keys(r, c).processed) for r, c in COMMITS}
    assert len(shards) == 3, "the commits must land on every primary"
    try:
        for repoid, commitid in COMMITS:
            state.mark_processing(repoid, commitid, [1, 2, 3])
            assert state.drop_processing(repoid, commitid, 3) == 2  # MULTI
            assert state.mark_processed(repoid, commitid, 1) == 1  # MULTI
            state.store_intermediate(repoid, commitid, 1, b"report-1")
            assert state.load_intermediates(repoid, commitid, [1, 2]) == [b"report-1", None]
            assert state.counts(repoid, commitid) == (1, 1)
            entry = state.enter_finisher(repoid, commitid)  # the Lua script, 6 keys
            assert (entry.processing, entry.processed, entry.notified) == (1, 1, False)
            assert entry.lock is not None
            assert state.enter_finisher(repoid, commitid).lock is None  # busy: counted
            assert state.processed_ids(repoid, commitid, 10) == [1]
            state.settle_merged(repoid, commitid, done=[1], redrive=[], version=1)  # MULTI
            entry.lock.release()
            state.mark_notified(repoid, commitid, 1)
            state.count(repoid, commitid, merge_passes=1)
            assert state.counts(repoid, commitid) == (1, 0)
            assert state.load_intermediates(repoid, commitid, [1]) == [None]
            stats = state.stats(repoid, commitid)
            assert (stats["finisher_runs"], stats["lock_busy"], stats["merge_passes"]) == (1, 1, 1)
        found = state.intermediates_exist([(r, c, 1) for r, c in COMMITS])  # across slots
        assert found == [False] * len(COMMITS)
    finally:
        for key in client.scan_iter(match=f"{namespace}:*"):
            client.delete(key)
        client.close()


def test_a_shard_changing_hands_is_claimed_once_and_a_steady_cluster_never(
    cluster: RedisClusterNodes, namespace: str
) -> None:
    client = cluster_client(cluster.url)
    watch = SlotOwnerEpochs(client, lambda: namespace)
    others = SlotOwnerEpochs(cluster_client(cluster.url), lambda: namespace)
    try:
        slots = watch.shard_slots()
        assert len(slots) == 3
        assert watch.changed() is True  # no markers yet: claimed once
        assert others.changed() is False and watch.changed() is False
        # A marker naming another node: what a promoted replica finds.
        client.set(watch.marker(slots[1]), "a-primary-that-is-gone")
        assert others.changed() is True
        assert watch.changed() is False
        client.delete(watch.marker(slots[2]))  # a shard that lost its data
        assert watch.changed() is True and others.changed() is False
    finally:
        for key in client.scan_iter(match=f"{namespace}:*"):
            client.delete(key)
        client.close()
        others.client.close()
