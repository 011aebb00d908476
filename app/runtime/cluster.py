"""Redis Cluster: the client covworker builds, and how it notices a failover.

``COVWORKER_REDIS_CLUSTER=true`` makes ``REDIS_URL`` a seed node of a
cluster. Every multi-key script and MULTI of covworker stays in one hash
slot: the pipeline state's keys of a commit share the hash tag
``{<repoid>:<commitid>}`` (app/runtime/state.py) and each gate script touches one
key (middleware/). The client rides through a failover
(``FailoverRidingCluster``: a connection error refreshes its slot table and
the call is tried again, with backoff, for up to ``RIDE_THROUGH_S``), so api
and worker calls wait out the few seconds a replica takes to be promoted
instead of failing.

A promoted replica has what was replicated to it, not the last writes its
primary acknowledged: Redis replicates asynchronously. Those writes are the
pipeline's progress (an upload added to a commit's processed set, say), and
PostgreSQL still holds the truth. ``SlotOwnerEpochs`` notices that a shard
changed hands: one marker per shard, on a slot of that shard, holds the node
id of the primary that wrote it. A marker missing (the shard lost its data)
or naming another node (its replica took over) is claimed by one process
with a compare-and-set, which then re-drives everything in flight, as after
Redis lost its data (app/recovery/watch.py): within
``COVWORKER_REDIS_LOSS_CHECK_S`` of the promotion.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from redis.backoff import ExponentialBackoff
from redis.cluster import RedisCluster
from redis.crc import key_slot
from redis.exceptions import ClusterDownError, ConnectionError, SlotNotCoveredError, TimeoutError
from redis.retry import Retry

from app.lua import read_script

logger = logging.getLogger(__name__)

#: Attempts of a cluster call through a failover, and their backoff: about
#: 20 s in all, longer than a promotion with the default cluster-node-timeout
#: (15 s) takes.
CLUSTER_RETRIES = 24
CLUSTER_BACKOFF_CAP_S = 1.0

#: Swap the marker if it still holds what was read: only one process claims a change.
#: (Its KEYS and ARGV: the script's header.)
CLAIM_SCRIPT = read_script("owner_epoch_claim.lua")


#: How long a command keeps being tried through a failover (s): longer than a
#: promotion takes with the default cluster-node-timeout (15 s).
RIDE_THROUGH_S = 30.0
#: Errors a failover raises while no node serves a slot.
FAILOVER_ERRORS = (ConnectionError, TimeoutError, ClusterDownError, SlotNotCoveredError)


class FailoverRidingCluster(RedisCluster):
    """A ``RedisCluster`` whose commands wait out a failover, with backoff.

    redis-py refreshes its slot table and tries a command again when its node
    is unreachable, but at once: its attempts are spent in milliseconds, long
    before a replica is promoted (the cluster's node timeout, seconds). Here
    each command (scripts too) is tried again with a growing pause, up to
    ``RIDE_THROUGH_S``, so an upload waits for the promotion instead of
    failing. A pipeline is not: in a worker its message is retried by
    Dramatiq's ``Retries`` with backoff.
    """

    def execute_command(self, *args: Any, **kwargs: Any) -> Any:
        deadline = time.monotonic() + RIDE_THROUGH_S
        pause = 0.05
        while True:
            try:
                return super().execute_command(*args, **kwargs)
            except FAILOVER_ERRORS:
                if time.monotonic() + pause > deadline:
                    raise
                time.sleep(pause)
                pause = min(pause * 2, CLUSTER_BACKOFF_CAP_S)


def cluster_client(url: str) -> RedisCluster:
    """A Redis Cluster client from a seed node's URL that rides through failovers."""
    return FailoverRidingCluster.from_url(
        url,
        retry=Retry(ExponentialBackoff(cap=CLUSTER_BACKOFF_CAP_S, base=0.05), CLUSTER_RETRIES),
    )


_TAGS: dict[int, str] = {}


def tag_for_slot(slot: int) -> str:
    """A short hash tag whose keys land on ``slot`` (found once, then kept)."""
    if slot not in _TAGS:
        n = 0
        while True:
            found = key_slot(str(n).encode())
            _TAGS.setdefault(found, str(n))
            if found == slot:
                break
            n += 1
    return _TAGS[slot]


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class SlotOwnerEpochs:
    """One epoch marker per shard of the cluster, holding its primary's node id.

    ``changed()`` is True, for one caller among all processes, when a shard's
    marker is missing or names another primary: that caller re-drives.
    """

    def __init__(self, client: RedisCluster, prefix: Callable[[], str]) -> None:
        self.client = client
        self.prefix = prefix
        self._claim = client.register_script(CLAIM_SCRIPT)

    def marker(self, slot: int) -> str:
        return f"{self.prefix()}:owner-epoch:{{{tag_for_slot(slot)}}}"

    def shard_slots(self) -> list[int]:
        """The first slot of each shard, as the cluster tells it now."""
        found: Any = self.client.cluster_slots()  # {(first, last): {...}}
        return sorted(int(first) for first, _ in found)

    def changed(self) -> bool:
        claimed = []
        for slot in self.shard_slots():
            key = self.marker(slot)
            found = self.client.get(key)  # routes to the slot's primary (MOVED refreshes)
            node = self.client.get_node_from_key(key)
            owner = _text(self.client.execute_command("CLUSTER MYID", target_nodes=node))
            old = _text(found) if found is not None else ""
            if old == owner:
                continue
            if self._claim(keys=[key], args=[old, owner]):
                claimed.append((slot, old or "no marker", owner))
        for slot, old, owner in claimed:
            logger.warning(
                "Redis Cluster: the shard of slot %s is now on %s (was %s: a failover, "
                "or the shard lost its data); re-driving everything in flight.",
                slot,
                owner,
                old,
            )
        return bool(claimed)
