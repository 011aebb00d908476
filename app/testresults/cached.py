"""A repository's slowest and flakiest tests, computed at most once per
``COVWORKER_TESTRESULTS_SUMMARY_CACHE_S`` (and one at a time) per repository.

Reading them aggregates the repository's daily history: with 1.6 million
runs that is 2.4 s of PostgreSQL per GET, and ``/-/tests`` of a public
repository is anyone's to fetch. So the answer is kept in Redis for a few
seconds (``summary_cache_key``), the same for every reader (it holds no
visitor's data: who may read the repository is checked before), and a
Redis lock (``SET NX``) lets one request compute it while the others wait
for its answer instead of computing it too. The lock expires on its own
(``LOCK_S``) if its holder dies; Redis down: each request computes, as
before the cache.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any

import redis

from app.runtime.services import Services

logger = logging.getLogger(__name__)

#: How long one computation may hold the lock (s): then another may compute.
LOCK_S = 60
#: How often a waiting request looks for the answer (s).
POLL_S = 0.05


def summary_cache_key(namespace: str, repository_id: int) -> str:
    return f"{namespace}:tests-summary:{repository_id}"


def cached_summary(
    services: Services, repository_id: int, compute: Callable[[], dict[str, Any]]
) -> dict[str, Any]:
    """``compute()``'s answer for the repository, from the cache while it is
    fresh; computed by one request at a time when it is not."""
    ttl = services.settings.testresults_summary_cache_s
    if ttl <= 0:
        return compute()
    key = summary_cache_key(services.settings.namespace, repository_id)
    client = services.redis
    try:
        while True:
            raw = client.get(key)
            if isinstance(raw, bytes | str):
                found: dict[str, Any] = json.loads(raw)
                return found
            if client.set(f"{key}:lock", "1", nx=True, ex=LOCK_S):
                try:
                    data = compute()
                    client.set(key, json.dumps(data), px=int(ttl * 1000))
                finally:
                    client.delete(f"{key}:lock")
                return data
            time.sleep(POLL_S)
    except redis.RedisError:
        logger.warning("Test summary cache unavailable; computing it", exc_info=True)
        return compute()
