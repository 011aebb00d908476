"""/-/ops counts worker processes, not every process that spoke to the broker."""

from __future__ import annotations

import time
from pathlib import Path

import dramatiq
import pytest
from dramatiq.brokers.redis import RedisBroker

from app.runtime.services import Services
from app.runtime.state import broker_namespace
from app.web.ops import ops_state
from tests.support.brokers import settings_of
from tests.support.processes import dramatiq_workers, migrated_database

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]


def _workers_shown(env: dict[str, str]) -> int:
    services = Services.from_settings(settings_of(env))
    try:
        return int(ops_state(services)["broker"]["workers"])
    finally:
        services.close()


def test_two_worker_processes_are_two_workers_beside_a_process_that_only_enqueues(
    tmp_path: Path, namespace: str
) -> None:
    with migrated_database(namespace) as (_db_url, env):
        # A process that only enqueues (as `covworker serve` and the CLI do)
        # leaves a heartbeat in Dramatiq's Redis broker all the same.
        enqueuer = RedisBroker(url=env["REDIS_URL"], namespace=broker_namespace(namespace))
        dramatiq.set_broker(enqueuer)

        @dramatiq.actor(broker=enqueuer, queue_name="elsewhere")
        def nothing() -> None: ...

        nothing.send()
        with dramatiq_workers(env, tmp_path / "worker.log", processes=2, threads=1):
            deadline = time.monotonic() + 60
            while (shown := _workers_shown(env)) < 2 and time.monotonic() < deadline:
                time.sleep(0.5)
            time.sleep(2.5)  # one more report interval: nothing else is counted
            assert _workers_shown(env) == shown == 2
        enqueuer.close()
        deadline = time.monotonic() + 30  # a stopped worker deletes its report
        while _workers_shown(env) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert _workers_shown(env) == 0
