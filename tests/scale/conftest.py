from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.redis_cluster import RedisClusterNodes, redis_cluster


@pytest.fixture(scope="session")
def cluster() -> Iterator[RedisClusterNodes]:
    """A 3-primary, 3-replica Redis Cluster shared by the tests that do not fail it over."""
    with redis_cluster() as nodes:
        yield nodes
