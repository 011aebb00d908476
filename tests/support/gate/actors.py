"""Actors for the gate's end-to-end tests, run by real ``dramatiq`` worker processes.

Started as ``python -m dramatiq tests.support.gate.actors``; configured by
environment variables, since the dramatiq CLI imports this module itself:
``GATE_TEST_REDIS_URL``, ``GATE_TEST_NAMESPACE`` (broker namespace and key
prefix), ``GATE_TEST_LEASE_MS``, ``GATE_TEST_BROKER_HEARTBEAT_MS`` and
``GATE_TEST_MAINTENANCE_CHANCE`` (how fast the broker requeues the messages
of a dead worker).

Every run of a gated actor ends with one record, ``[key, seq, start, end,
pid]`` (wall-clock seconds), pushed to ``<namespace>:runs``.
"""

from __future__ import annotations

import json
import os
import time

import dramatiq
import redis
from dramatiq.brokers.redis import RedisBroker

from middleware import PerKeyConcurrency

REDIS_URL = os.environ.get("GATE_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
NAMESPACE = os.environ.get("GATE_TEST_NAMESPACE", "cwt-gate-actors")
LEASE_MS = int(os.environ.get("GATE_TEST_LEASE_MS", "2000"))

client = redis.Redis.from_url(REDIS_URL)
broker = RedisBroker(
    url=REDIS_URL,
    namespace=NAMESPACE,
    heartbeat_timeout=int(os.environ.get("GATE_TEST_BROKER_HEARTBEAT_MS", "60000")),
    maintenance_chance=int(os.environ.get("GATE_TEST_MAINTENANCE_CHANCE", "1000")),
)
broker.add_middleware(
    PerKeyConcurrency(
        client=client,
        key_prefix=f"{NAMESPACE}:gate",
        concurrency_delay_ms=50,
        concurrency_jitter_ms=150,
        concurrency_lease_ms=LEASE_MS,
    )
)
dramatiq.set_broker(broker)


def by_key(key: str, seq: int, *rest: object) -> str:
    return key


def finished(key: str, seq: int, start: float) -> None:
    record = [key, seq, start, time.time(), os.getpid()]
    client.rpush(f"{NAMESPACE}:runs", json.dumps(record))


@dramatiq.actor(concurrency_key=by_key, concurrency_limit=2, max_retries=0)
def record(key: str, seq: int, hold_ms: int) -> None:
    """Hold the slot for ``hold_ms``, then record the run."""
    start = time.time()
    time.sleep(hold_ms / 1000)
    finished(key, seq, start)


@dramatiq.actor(concurrency_key=by_key, concurrency_limit=2, max_retries=0)
def blocker(key: str, seq: int) -> None:
    """Announce the start, then hold the slot until this process is killed.

    Redelivered after the kill (``<namespace>:killed`` is set), it just finishes.
    """
    start = time.time()
    if not client.exists(f"{NAMESPACE}:killed"):
        client.rpush(f"{NAMESPACE}:started", json.dumps([seq, os.getpid()]))
        client.blpop([f"{NAMESPACE}:never"], timeout=120)
    finished(key, seq, start)


@dramatiq.actor(max_retries=0)
def ping(token: str) -> None:
    """Tell the test this worker is consuming."""
    client.rpush(f"{NAMESPACE}:pong", json.dumps([token, os.getpid()]))
