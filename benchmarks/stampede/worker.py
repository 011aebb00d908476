"""The bench worker's entry point: ``dramatiq benchmarks.stampede.worker``.

Importing this module is the worker's start-up, as with ``app.actors``: it
reads ``Settings`` and ``BenchWorkerSettings`` from the environment once and
builds the real app with :func:`app.runtime.worker.build_app` on a Redis client
that counts its commands. For ``covworker`` that is all (plus the timing
middleware); a baseline strategy replaces the finisher actor.
"""

from __future__ import annotations

import redis

from app.runtime.worker import build_app
from app.settings import Settings
from benchmarks.stampede.config import BenchWorkerSettings
from benchmarks.stampede.instrument import BenchKeys, DeliveryTimer, HolderTracker, Recorder
from benchmarks.stampede.strategies import Baseline
from tests.support.redis_commands import CommandCounter, counting_client

settings = Settings()
bench = BenchWorkerSettings()
counter = CommandCounter()
recorder = Recorder(
    redis.Redis.from_url(settings.redis_url), BenchKeys.under(settings.namespace), counter
)
covworker = build_app(settings, redis_client=counting_client(settings.redis_url, counter))
from app import actors  # noqa: E402  (declares the actors on covworker)

broker = covworker.broker
# First in the list: its before-hook runs first and its after-hooks last, so a
# delivery's interval holds the gate's decision and Retries' requeue too.
broker.add_middleware(DeliveryTimer(recorder), before=type(broker.middleware[0]))
if bench.strategy.startswith("covworker"):
    broker.add_middleware(HolderTracker(recorder))  # last: inside the gate's slot
else:
    Baseline(covworker, bench, recorder).declare(actors)
