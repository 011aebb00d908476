"""``RedisBackend``: each step one Lua script on one hash-tagged key, on Redis server time.

The protocol both backends share is tested in ``test_base.py`` (on fakeredis);
here, what is the Redis backend's own: the scripts' one key, their clock (the
server's ``TIME``), the key's expiry, and atomicity under real contention.
"""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path
from typing import Any

import fakeredis
import pytest
import redis

import middleware
from middleware import PerKeyConcurrency, RedisBackend
from tests.support.gate.leases import ACQUIRED, DEFER, SKIPPED, take

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def leases(redis_client: redis.Redis) -> RedisBackend:
    """The backend on the real Redis."""
    return RedisBackend(redis_client)


@pytest.fixture
def key(namespace: str) -> str:
    """A gate key of this test's own."""
    return f"{namespace}:gate:{{k}}"


def server_ms(client: redis.Redis) -> int:
    seconds, micros = client.time()
    return int(seconds) * 1000 + int(micros) // 1000


def test_every_script_touches_one_hash_tagged_key_so_it_runs_on_redis_cluster() -> None:
    scripts = sorted((Path(middleware.__file__).parent / "gate" / "backends").glob("*.lua"))
    assert [s.name for s in scripts] == ["acquire.lua", "mark.lua", "release.lua", "renew.lua"]
    for script in scripts:
        code = "\n".join(
            line for line in script.read_text().splitlines() if not line.startswith("--")
        )
        assert set(re.findall(r"KEYS\[(\d+)\]", code)) == {"1"}, script.name
    # The key is hash-tagged on the gate key alone: every script's one key, one slot.
    gate = PerKeyConcurrency(backend=RedisBackend(fakeredis.FakeRedis()), key_prefix="test:gate")
    try:
        assert gate.backend_key("1:abc") == "test:gate:{1:abc}"
    finally:
        gate.heartbeat.stop()


def test_a_client_that_decodes_its_replies_gets_the_same_answers() -> None:
    client = fakeredis.FakeRedis(decode_responses=True)
    leases = RedisBackend(client)
    key = "test:gate:{k}"
    take(leases, key, "h:a", limit=1)
    take(leases, key, "h:m1", limit=1, message_id="m1", skip_if_pending=True)
    covered = take(leases, key, "h:m2", limit=1, message_id="m2", skip_if_pending=True)
    assert (covered.decision, covered.pending) == (SKIPPED, "m1")
    assert leases.holders(key) == ["h:a"]
    assert leases.markers(key) == ["p:m1"]
    assert leases.renew(key, [("h:gone", 1000)]) == ["h:gone"]
    mark: dict[str, Any] = {"pending_ttl_ms": 1000, "actor_name": "", "queue_name": ""}
    assert leases.mark_unless_pending(key, message_id="m3", **mark) == "m1"


@pytest.mark.integration
def test_a_lease_is_scored_by_its_expiry_in_redis_server_time(
    leases: RedisBackend, key: str, redis_client: redis.Redis
) -> None:
    before = server_ms(redis_client)
    take(leases, key, "h:a", limit=1, lease_ms=60_000)
    after = server_ms(redis_client)
    score = redis_client.zscore(key, "h:a")
    assert score is not None and before + 60_000 <= score <= after + 60_000
    # The key outlives its longest member by a second, then vanishes by itself.
    assert redis_client.pexpiretime(key) == int(score) + 1000


@pytest.mark.integration
def test_a_renewal_and_a_marker_move_the_keys_expiry_with_them(
    leases: RedisBackend, key: str, redis_client: redis.Redis
) -> None:
    take(leases, key, "h:a", limit=1, lease_ms=1000)
    assert leases.renew(key, [("h:a", 60_000)]) == []
    assert 59_000 < redis_client.pttl(key) <= 61_000
    leases.mark_unless_pending(
        key, message_id="m1", pending_ttl_ms=120_000, actor_name="a", queue_name="q"
    )
    assert 119_000 < redis_client.pttl(key) <= 121_000


@pytest.mark.integration
def test_a_lease_runs_out_on_redis_server_time(
    leases: RedisBackend, key: str, redis_client: redis.Redis
) -> None:
    assert take(leases, key, "h:a", limit=1, lease_ms=150).decision == ACQUIRED
    assert take(leases, key, "h:b", limit=1, lease_ms=150).decision == DEFER
    time.sleep(0.2)  # not synchronisation: the lease must run out
    outcome = take(leases, key, "h:b", limit=1, lease_ms=150)
    assert (outcome.decision, outcome.reclaimed) == (ACQUIRED, 1)
    assert 0 < redis_client.pttl(key) <= 1150


@pytest.mark.integration
def test_many_threads_acquiring_directly_never_exceed_the_limit(
    leases: RedisBackend, key: str, redis_client: redis.Redis
) -> None:
    inside = 0
    most = 0
    entered = 0
    lock = threading.Lock()

    def contend(n: int) -> None:
        nonlocal inside, most, entered
        for i in range(150):
            token = f"h:{n}:{i}"
            while take(leases, key, token, limit=3, lease_ms=5000).decision != ACQUIRED:
                pass
            with lock:
                inside += 1
                entered += 1
                most = max(most, inside)
            time.sleep(0.001)  # the work the slot is for
            with lock:
                inside -= 1
            leases.release(key, token)

    threads = [threading.Thread(target=contend, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert entered == 8 * 150  # every acquisition of every thread went through
    assert most == 3
    assert redis_client.zcard(key) == 0
