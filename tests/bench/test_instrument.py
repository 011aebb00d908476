"""The bench counts its own Redis commands exactly, on the shared real Redis."""

from __future__ import annotations

import uuid

import pytest

from tests.support.redis_commands import CommandCounter, counting_client
from tests.support.services import redis_test_url, require_redis

pytestmark = [pytest.mark.integration, pytest.mark.timeout(30)]


def test_every_command_is_counted_once_single_pipelined_or_in_a_transaction() -> None:
    require_redis()
    counter = CommandCounter()
    client = counting_client(redis_test_url(), counter)
    key = f"cwt-{uuid.uuid4().hex[:10]}:counted"
    try:
        client.ping()  # connects (the handshake's commands are counted too)
        before = counter.value
        client.set(key, 1)
        client.incr(key)
        assert counter.value - before == 2

        before = counter.value
        with client.pipeline(transaction=False) as pipe:
            pipe.incr(key).incr(key).get(key)
            assert pipe.execute()[-1] == b"4"
        assert counter.value - before == 3

        before = counter.value
        with client.pipeline(transaction=True) as pipe:
            pipe.incr(key).incr(key)
            pipe.execute()
        assert counter.value - before == 4, "MULTI, two INCRs, EXEC"
    finally:
        client.delete(key)
        client.close()
