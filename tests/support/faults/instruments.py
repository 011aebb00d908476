"""Test instruments for real worker processes: run records and duplicate sends.

``RunRecorder`` is added *after* the gate, so Dramatiq calls its
``before_process_message`` only for a message that holds a gate slot, and
its ``after_process_message`` before the gate releases it (after-hooks run
in reverse order): each recorded ``[start, end]`` lies inside a slot, and
counting overlaps of the records checks the gate bound from the outside.

``send_everything_twice`` makes a broker enqueue every new message twice
with the same message id: a duplicate delivery, as a redelivery after a
lost ack produces. Copies the gate defers, retries and delayed messages
coming due are sent once, or duplicates would multiply without end.
"""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any

import dramatiq
import redis
from dramatiq.middleware import Middleware

from tests.support.gate.records import max_running_per_key

#: Message options that mark a copy rather than a new message.
COPY_OPTIONS = frozenset({"retries", "concurrency_deferrals", "eta"})


class RunTimer(Middleware):
    """Times each run of ``actors``' messages from this middleware's
    before-hook to its after-hook and hands it to :meth:`ran`. Added after the
    gate, a run it sees holds a gate slot throughout. Benchmarks use it too
    (``benchmarks.stampede.instrument.HolderTracker``)."""

    def __init__(self, actors: frozenset[str]) -> None:
        self.actors = actors
        self._local = threading.local()  # a worker thread runs one message at a time

    def before_process_message(self, broker: dramatiq.Broker, message: Any) -> None:
        self._local.started = time.time() if message.actor_name in self.actors else None

    def after_process_message(
        self,
        broker: dramatiq.Broker,
        message: Any,
        *,
        result: Any = None,
        exception: BaseException | None = None,
    ) -> None:
        started = getattr(self._local, "started", None)
        self._local.started = None
        if started is not None:
            self.ran(message, started, time.time())

    def ran(self, message: Any, started: float, ended: float) -> None:
        """Note the run of ``message`` from ``started`` to ``ended`` (epoch seconds)."""
        raise NotImplementedError


class RunRecorder(RunTimer):
    """Pushes ``[actor, key, start, end, pid]`` of every gated run to a Redis list."""

    def __init__(self, client: redis.Redis, key: str, actors: frozenset[str]) -> None:
        super().__init__(actors)
        self.client = client
        self.key = key

    def ran(self, message: Any, started: float, ended: float) -> None:
        commit = f"{message.args[0]}:{message.args[1]}" if len(message.args) > 1 else "?"
        record = [message.actor_name, commit, started, ended, os.getpid()]
        self.client.rpush(self.key, json.dumps(record))


def send_everything_twice(broker: Any, client: redis.Redis, counter_key: str) -> None:
    """Wrap ``broker.enqueue`` so each new message is enqueued twice; count the twins."""
    enqueue_once = broker.enqueue

    def enqueue(message: Any, *, delay: int | None = None) -> Any:
        sent = enqueue_once(message, delay=delay)
        if delay is None and not (COPY_OPTIONS & message.options.keys()):
            enqueue_once(message, delay=delay)
            client.incr(counter_key)
        return sent

    broker.enqueue = enqueue


def max_overlap(records: list[list[Any]], actor: str) -> dict[str, int]:
    """Most runs of ``actor`` at once, per commit, from the records' start/end times."""
    runs = ((commit, start, end) for name, commit, start, end, _pid in records if name == actor)
    return max_running_per_key(runs)
