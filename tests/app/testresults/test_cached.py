"""A repository's test summary: computed once however many ask at once,
served from Redis while fresh, computed again once stale."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import redis

from app.runtime.services import Services
from app.testresults.cached import cached_summary, summary_cache_key
from tests.support.pipeline import unit_services


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    services = unit_services(tmp_path, testresults_summary_cache_s=0.5)
    yield services
    services.close()


class Counting:
    """A slow computation that counts its calls."""

    def __init__(self) -> None:
        self.calls = 0
        self.lock = threading.Lock()

    def __call__(self) -> dict[str, Any]:
        with self.lock:
            self.calls += 1
        time.sleep(0.3)
        return {"slowest": [{"name": "test_a", "runs": self.calls}]}


def test_sixteen_readers_at_once_cost_one_computation_and_get_the_same_answer(
    services: Services,
) -> None:
    compute = Counting()
    with ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(lambda _: cached_summary(services, 7, compute), range(16)))
    assert compute.calls == 1
    assert answers == [{"slowest": [{"name": "test_a", "runs": 1}]}] * 16


def test_a_stale_summary_is_computed_again_and_repositories_do_not_share_one(
    services: Services,
) -> None:
    compute = Counting()
    cached_summary(services, 7, compute)
    cached_summary(services, 8, compute)
    assert compute.calls == 2
    time.sleep(0.6)
    assert cached_summary(services, 7, compute)["slowest"][0]["runs"] == 3
    namespace = services.settings.namespace
    assert services.redis.get(f"{summary_cache_key(namespace, 7)}:lock") is None


def test_without_redis_or_with_no_cache_every_request_computes(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    compute = Counting()
    services.settings.testresults_summary_cache_s = 0
    cached_summary(services, 7, compute)
    cached_summary(services, 7, compute)
    services.settings.testresults_summary_cache_s = 30

    def down(*args: object, **kwargs: object) -> None:
        raise redis.ConnectionError("down")

    monkeypatch.setattr(services.redis, "get", down)
    assert cached_summary(services, 7, compute)["slowest"][0]["runs"] == 3
