"""covworker's worker with the test instruments: ``dramatiq tests.support.faults.worker_app``.

The same start-up as ``app.actors`` (``Settings()`` from the environment,
``build_app``), plus what three variables, read only by this test module, ask:

- ``COVWORKER_FAULT_POINTS``: the fault points to arm (``tests.support.faults.points``),
  e.g. ``merge.in_transaction=kill@2``; a bad spec stops the worker at start-up;
- ``COVWORKER_TEST_RECORD_KEY``: a Redis list that gets one record per gated
  run of ``upload_finisher`` and ``notify`` (``instruments.RunRecorder``);
- ``COVWORKER_TEST_DUPLICATE_KEY``: every new message this worker sends is
  enqueued twice; the key counts the duplicates.
"""

from __future__ import annotations

import os

import redis

from app.runtime.worker import build_app
from app.settings import Settings
from tests.support.faults.instruments import RunRecorder, send_everything_twice
from tests.support.faults.points import FaultPoints, install

settings = Settings()
covworker = build_app(settings)
from app import actors  # noqa: E402, F401  (declares the actors on covworker)

broker = covworker.broker
install(covworker.services, FaultPoints.parse(os.environ.get("COVWORKER_FAULT_POINTS", "")))
_client = redis.Redis.from_url(settings.redis_url)
if record_key := os.environ.get("COVWORKER_TEST_RECORD_KEY"):
    broker.add_middleware(
        RunRecorder(_client, record_key, frozenset({"upload_finisher", "notify"}))
    )
if duplicate_key := os.environ.get("COVWORKER_TEST_DUPLICATE_KEY"):
    send_everything_twice(broker, _client, duplicate_key)
