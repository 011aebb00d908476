from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import redis

from tests.support.services import (
    delete_namespace,
    fresh_database,
    redis_test_url,
    require_redis,
)


@pytest.fixture
def namespace() -> Iterator[str]:
    """A key namespace of this test's own, so tests never see each other's
    keys; every key under it is deleted afterwards (Dramatiq's queues, the
    gate's and the pipeline's keys all start with it)."""
    name = f"cwt-{uuid.uuid4().hex[:10]}"
    yield name
    delete_namespace(redis_test_url(), name)


@pytest.fixture
def redis_url() -> str:
    require_redis()
    return redis_test_url()


@pytest.fixture
def redis_client(redis_url: str) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(redis_url)
    yield client
    client.close()


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A fresh, empty PostgreSQL database for this test."""
    with fresh_database() as url:
        yield url
