"""The gate in real ``dramatiq`` worker processes on real Redis, including SIGKILL.

The last test is a documented comparison: Dramatiq's own
``ConcurrentRateLimiter`` keeps a killed holder's slot for as long as traffic
on the key continues, because every successful acquire and every release
re-sets the shared counter with a fresh TTL. The gate keeps one lease per
holder, so a dead holder's slot frees when *its own* lease runs out.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dramatiq
import pytest
import redis
from dramatiq.brokers.redis import RedisBroker
from dramatiq.rate_limits import ConcurrentRateLimiter
from dramatiq.rate_limits.backends import RedisBackend

from middleware import RedisBackend as GateRedisBackend
from tests.support.gate.records import max_running_per_key
from tests.support.paths import ROOT

pytestmark = [pytest.mark.e2e, pytest.mark.integration]

LEASE_MS = 1500


class Workers:
    """``dramatiq`` worker processes started by one test, stopped after it."""

    def __init__(self, redis_url: str, namespace: str, logs: Path) -> None:
        self.env = {
            **os.environ,
            "GATE_TEST_REDIS_URL": redis_url,
            "GATE_TEST_NAMESPACE": namespace,
            "GATE_TEST_LEASE_MS": str(LEASE_MS),
            "GATE_TEST_BROKER_HEARTBEAT_MS": "5000",
            "GATE_TEST_MAINTENANCE_CHANCE": "200000",
            "dramatiq_worker_timeout": "100",
            "PYTHONPATH": str(ROOT),
        }
        self.logs = logs
        self.started: list[subprocess.Popen[bytes]] = []

    def start(self) -> subprocess.Popen[bytes]:
        log = open(self.logs / f"worker-{len(self.started)}.log", "wb")  # noqa: SIM115
        command = [sys.executable, "-m", "dramatiq", "tests.support.gate.actors"]
        process = subprocess.Popen(
            [*command, "--processes", "1", "--threads", "4"],
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.started.append(process)
        return process

    def stop(self) -> None:
        for process in self.started:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.started:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)  # the session this test started
                process.wait()


@pytest.fixture
def workers(redis_url: str, namespace: str, tmp_path: Path) -> Iterator[Workers]:
    workers = Workers(redis_url, namespace, tmp_path)
    yield workers
    workers.stop()


@pytest.fixture
def sender(redis_url: str, namespace: str, redis_client: redis.Redis) -> Iterator[RedisBroker]:
    """A broker that only sends, in the workers' namespace."""
    broker = RedisBroker(url=redis_url, namespace=namespace)
    broker.declare_queue("default")
    yield broker
    broker.close()
    for key in redis_client.scan_iter(match=f"{namespace}:*"):
        redis_client.delete(key)


def send(broker: RedisBroker, actor_name: str, *args: Any) -> None:
    broker.enqueue(
        dramatiq.Message(
            queue_name="default", actor_name=actor_name, args=args, kwargs={}, options={}
        )
    )


def recorded_runs(client: redis.Redis, namespace: str) -> list[list[Any]]:
    return [json.loads(raw) for raw in client.lrange(f"{namespace}:runs", 0, -1)]


def wait_for(client: redis.Redis, list_key: str) -> list[Any]:
    popped = client.blpop([list_key], timeout=60)
    assert popped is not None, f"nothing arrived on {list_key}"
    return json.loads(popped[1])


def dead_letters(client: redis.Redis, namespace: str) -> int:
    return int(client.zcard(f"{namespace}:default.XQ"))


@pytest.mark.timeout(150)
def test_hundreds_of_messages_in_worker_processes_never_run_more_than_the_limit_per_key(
    workers: Workers, sender: RedisBroker, redis_client: redis.Redis, namespace: str
) -> None:
    workers.start()
    workers.start()
    consuming: set[int] = set()
    while len(consuming) < 2:  # both processes are up before the stampede
        send(sender, "ping", "are you there")
        consuming.add(wait_for(redis_client, f"{namespace}:pong")[1])
    keys = [f"commit-{k}" for k in range(5)]
    for seq in range(300):
        send(sender, "record", keys[seq % 5], seq, 5 + seq % 4 * 5)
    sender.join("default", timeout=120_000)

    runs = recorded_runs(redis_client, namespace)
    most = max_running_per_key((key, start, end) for key, _, start, end, _ in runs)
    assert max(most.values()) <= 2, most
    assert set(most.values()) == {2}, "every key reached its limit: the gate is not a mutex"
    assert Counter(seq for _, seq, _, _, _ in runs) == Counter(range(300))
    assert len({pid for *_, pid in runs}) == 2, "both worker processes took part"
    assert dead_letters(redis_client, namespace) == 0
    assert list(redis_client.scan_iter(match=f"{namespace}:gate:*")) == []


@pytest.mark.timeout(150)
def test_a_worker_killed_while_holding_slots_frees_them_within_the_lease(
    workers: Workers, sender: RedisBroker, redis_client: redis.Redis, namespace: str
) -> None:
    doomed = workers.start()
    send(sender, "blocker", "hot", 1001)
    send(sender, "blocker", "hot", 1002)
    (_, doomed_pid), (_, other_pid) = (
        wait_for(redis_client, f"{namespace}:started") for _ in range(2)
    )
    assert doomed_pid == other_pid  # one worker process holds both slots of "hot"

    workers.start()
    pong_pid = doomed_pid
    while pong_pid == doomed_pid:  # until the survivor is consuming
        send(sender, "ping", "are you there")
        _, pong_pid = wait_for(redis_client, f"{namespace}:pong")

    os.kill(doomed_pid, signal.SIGKILL)
    killed_at = time.time()
    redis_client.set(f"{namespace}:killed", 1)
    doomed.wait(timeout=60)  # its parent notices and shuts down

    def keep_sending() -> None:
        for seq in range(60):
            send(sender, "record", "hot", seq, 20)
            time.sleep(0.05)  # the traffic's pace, not synchronisation

    traffic = threading.Thread(target=keep_sending)
    traffic.start()
    traffic.join()
    sender.join("default", timeout=120_000)

    runs = recorded_runs(redis_client, namespace)
    assert Counter(seq for _, seq, _, _, _ in runs) == Counter([*range(60), 1001, 1002])
    first_start = min(start for _, seq, start, _, _ in runs if seq < 1000)
    lease = LEASE_MS / 1000
    # The dead holder's slots were really held (renewed about a third of a
    # lease before the kill at the latest) and came back within the lease,
    # plus a deferral delay and some slack for a loaded machine.
    assert first_start >= killed_at + lease / 2
    assert first_start <= killed_at + lease + 3.0
    most = max_running_per_key((key, start, end) for key, _, start, end, _ in runs)
    assert most == {"hot": 2}
    assert dead_letters(redis_client, namespace) == 0
    assert not redis_client.exists(f"{namespace}:gate:{{hot}}")


DEAD_HOLDER = """
import sys, time, redis
from dramatiq.rate_limits import ConcurrentRateLimiter
from dramatiq.rate_limits.backends import RedisBackend
from middleware import RedisBackend as GateRedisBackend
url, crl_key, gate_key, lease = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
client = redis.Redis.from_url(url)
assert ConcurrentRateLimiter(RedisBackend(client=client), crl_key, limit=2, ttl=lease)._acquire()
assert GateRedisBackend(client).acquire(gate_key, "h:dead", limit=2, lease_ms=lease,
                               message_id="dead")[0] == 1
print("held", flush=True)
time.sleep(120)
"""


@pytest.mark.timeout(60)
def test_dramatiqs_concurrent_rate_limiter_keeps_a_killed_holders_slot_under_traffic(
    redis_url: str, redis_client: redis.Redis, namespace: str
) -> None:
    crl_key, gate_key = f"{namespace}:crl", f"{namespace}:gate:{{hot}}"
    holder = subprocess.Popen(
        [sys.executable, "-c", DEAD_HOLDER, redis_url, crl_key, gate_key, str(LEASE_MS)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
    holder.kill()  # SIGKILL, holding one of two slots of each
    holder.wait()

    crl = ConcurrentRateLimiter(RedisBackend(client=redis_client), "crl", limit=2, ttl=LEASE_MS)
    crl.key = crl_key
    leases = GateRedisBackend(redis_client)
    runs: list[tuple[str, float, float]] = []
    lock = threading.Lock()
    deadline = time.monotonic() + 3 * LEASE_MS / 1000

    def hold(name: str) -> None:
        start = time.monotonic()
        time.sleep(0.02)
        with lock:
            runs.append((name, start, time.monotonic()))

    def crl_traffic() -> None:
        while time.monotonic() < deadline:
            with crl.acquire(raise_on_failure=False) as acquired:
                if acquired:
                    hold("crl")
            time.sleep(0.005)

    def gate_traffic(n: int) -> None:
        i = 0
        while time.monotonic() < deadline:
            token = f"h:{n}:{i}"
            i += 1
            decision, *_ = leases.acquire(
                gate_key, token, limit=2, lease_ms=LEASE_MS, message_id=token
            )
            if decision == 1:
                hold("gate")
                leases.release(gate_key, token)
            time.sleep(0.005)

    threads = [threading.Thread(target=crl_traffic) for _ in range(4)]
    threads += [threading.Thread(target=gate_traffic, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    most = max_running_per_key(runs)
    # Three leases/TTLs after the kill: the limiter still counts the dead
    # holder (its counter's TTL was refreshed by the live traffic), so live
    # work never got more than one of two slots. The gate got both back.
    assert most == {"crl": 1, "gate": 2}
    assert int(redis_client.get(crl_key) or 0) == 1
    assert not redis_client.zscore(gate_key, "h:dead")
    for key in (crl_key, gate_key):
        redis_client.delete(key)
