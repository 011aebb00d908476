"""The test suite cleans up after itself on the shared Redis."""

from __future__ import annotations

import uuid

import redis

from tests.support.services import delete_namespace, redis_test_url, require_redis


def test_delete_namespace_removes_every_key_of_the_namespace_and_nothing_else() -> None:
    require_redis()
    client = redis.Redis.from_url(redis_test_url())
    mine, other = f"cwt-{uuid.uuid4().hex[:10]}", f"cwt-{uuid.uuid4().hex[:10]}"
    try:
        keys = [f"{mine}:gate:{{k{i}}}" for i in range(1200)] + [f"{mine}-dramatiq:q"]
        client.mset(dict.fromkeys(keys, "1"))
        client.set(f"{other}:kept", "1")
        assert delete_namespace(redis_test_url(), mine) == len(keys)
        assert list(client.scan_iter(match=f"{mine}*")) == []
        assert client.get(f"{other}:kept") == b"1"
    finally:
        client.delete(f"{other}:kept", *[f"{mine}:gate:{{k{i}}}" for i in range(3)])
        client.close()
