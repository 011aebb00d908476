"""What the bench workers record, in the run's own Redis namespace.

- Every Redis command a process sends through the app's client is counted
  by the connection itself (:func:`counting_client`), so the figure is exact
  even while other programs share the Redis server. The recording below uses
  a separate, uncounted client.
- :class:`DeliveryTimer`, put first in the broker's middleware, sees every
  finisher delivery from before the first before-hook to after the last
  after-hook: gate decisions, deferral enqueues, lock waits and Retries'
  requeues are all inside its interval (the busy time of a worker thread).
  It also notes the thread's CPU time over the same interval: with many
  threads per process on few cores, wall time includes waiting for the GIL.
- :class:`HolderTracker`, put last, sees only deliveries that every earlier
  middleware (the gate) let run: its interval lies inside the gate's slot.
- :class:`Recorder` also notes the CPU time of the whole worker process
  (every thread: consumers, workers, heartbeats, the gate's renewer) from
  the start of its first delivery to the end of its last one (the driver's
  set-up, while the workers only poll, is not the run's cost): ``worker_cpu_seconds``,
  the run's primary cost figure. On many threads sharing few cores, wall
  time measures the wait for the GIL and a core, not the work.
- The events stay in the process's memory and are written in one pipeline
  when the worker shuts down (:meth:`Recorder.flush`): a Redis write per
  delivery would add CPU and a round trip to the very deliveries being
  timed, on the same few cores.
"""

from __future__ import annotations

import json
import os
import resource
import threading
import time
from dataclasses import dataclass, fields
from typing import Any

import dramatiq
import redis
from dramatiq.errors import RateLimitExceeded, Retry
from dramatiq.middleware import Middleware

from tests.support.faults.instruments import RunTimer
from tests.support.redis_commands import CommandCounter

#: Actors whose deliveries are recorded one by one.
FINISHER_ACTORS = frozenset({"upload_finisher", "bench_finisher"})
#: Actors whose deliveries are recorded for the notification's latency.
NOTIFY_ACTORS = frozenset({"notify"})
#: Exceptions that mean "not admitted, try later" (a rejected delivery).
REJECTIONS: tuple[type[BaseException], ...] = (Retry, RateLimitExceeded)


@dataclass(frozen=True)
class BenchKeys:
    """The run's recording keys, each ``{namespace}:bench:{field}`` (:meth:`under`)."""

    deliveries: str
    holders: str
    commands: str
    #: Notify deliveries that ran: commit ``k``, message created ``q``, ran ``t0``/``t1``.
    notifies: str
    #: Hash: pid -> CPU seconds of the worker process during the run.
    cpu: str
    #: Hash: pid -> CPU seconds its deliveries' threads spent in them (every actor).
    delivery_cpu: str
    #: Hash: pid -> peak resident set size of the worker process, bytes.
    rss: str
    ready: str

    @classmethod
    def under(cls, namespace: str) -> BenchKeys:
        return cls(**{f.name: f"{namespace}:bench:{f.name}" for f in fields(cls)})


def commit_of(message: Any) -> str:
    args = [*message.args, None, None]
    return f"{args[0]}:{args[1]}"


class Recorder:
    """Keeps this process's events in memory; :meth:`flush` writes them once.

    Events are appended from many worker threads (``list.append`` is atomic);
    ``flush`` runs after the worker's threads have stopped.
    """

    #: Events per RPUSH when flushing.
    FLUSH_CHUNK = 1000

    def __init__(self, client: redis.Redis, keys: BenchKeys, counter: CommandCounter) -> None:
        self.client = client
        self.keys = keys
        self.counter = counter
        self.deliveries: list[dict[str, Any]] = []
        self.holders: list[dict[str, Any]] = []
        self.notifies: list[dict[str, Any]] = []
        #: The process's command count when its last delivery (of any actor)
        #: ended: idle polling after the run settled is not the run's cost.
        self.commands = 0
        #: Process CPU time (all threads) at the start of the first delivery (of
        #: any actor), and spent since, up to the end of the last one.
        self.cpu_at_start: float | None = None
        self.cpu = 0.0
        #: Thread CPU of each delivery (every actor), appended by its thread
        #: and summed at flush: the rest of ``cpu`` is the process's other
        #: threads (consumers, heartbeats) and Dramatiq's work between deliveries.
        self.delivery_cpus: list[float] = []

    def delivery(self, event: dict[str, Any] | None, cpu: float) -> None:
        """Note a delivery that ended: its event (finishers only) and its thread CPU."""
        if event is not None:
            self.deliveries.append(event)
        self.delivery_cpus.append(cpu)
        self.commands = self.counter.value
        if self.cpu_at_start is not None:
            self.cpu = time.process_time() - self.cpu_at_start

    def delivery_started(self) -> None:
        if self.cpu_at_start is None:
            self.cpu_at_start = time.process_time()

    def holder(self, commit: str, started: float, ended: float) -> None:
        """Note an admitted finisher's running interval."""
        self.holders.append({"k": commit, "t0": started, "t1": ended})

    def ready(self) -> None:
        self.client.rpush(self.keys.ready, os.getpid())

    def flush(self) -> None:
        """Write every event, then this process's command count (the driver
        counts those entries to know every process has flushed)."""
        with self.client.pipeline(transaction=False) as pipe:
            recorded = (
                (self.keys.deliveries, self.deliveries),
                (self.keys.holders, self.holders),
                (self.keys.notifies, self.notifies),
            )
            for key, events in recorded:
                for start in range(0, len(events), self.FLUSH_CHUNK):
                    chunk = events[start : start + self.FLUSH_CHUNK]
                    pipe.rpush(key, *(json.dumps(e) for e in chunk))
            pipe.hset(self.keys.cpu, str(os.getpid()), repr(self.cpu))
            pipe.hset(self.keys.delivery_cpu, str(os.getpid()), repr(sum(self.delivery_cpus)))
            peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
            pipe.hset(self.keys.rss, str(os.getpid()), peak_kib * 1024)
            pipe.hset(self.keys.commands, str(os.getpid()), self.commands)
            pipe.execute()


class DeliveryTimer(Middleware):
    """Times every delivery of a finisher actor, whatever happens to it."""

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder
        self._local = threading.local()

    def after_worker_boot(self, broker: dramatiq.Broker, worker: Any) -> None:
        self.recorder.ready()

    def after_worker_shutdown(self, broker: dramatiq.Broker, worker: Any) -> None:
        self.recorder.flush()

    def before_process_message(self, broker: dramatiq.Broker, message: Any) -> None:
        self.recorder.delivery_started()
        self._local.started = (time.time(), time.perf_counter(), time.thread_time())

    def after_process_message(
        self,
        broker: dramatiq.Broker,
        message: Any,
        *,
        result: Any = None,
        exception: BaseException | None = None,
    ) -> None:
        if exception is None:
            outcome = "ran"
        elif isinstance(exception, REJECTIONS):
            outcome = "rejected"
        else:
            outcome = "error"
        self._done(message, outcome)

    def after_skip_message(self, broker: dramatiq.Broker, message: Any) -> None:
        self._done(message, "rejected")

    def _done(self, message: Any, outcome: str) -> None:
        started = getattr(self._local, "started", None)
        self._local.started = None
        cpu = time.thread_time() - started[2] if started is not None else 0.0
        if started is not None and message.actor_name in NOTIFY_ACTORS and outcome == "ran":
            wall, perf, _ = started
            self.recorder.notifies.append(
                {
                    "k": commit_of(message),
                    "q": message.message_timestamp / 1000,
                    "t0": wall,
                    "t1": wall + (time.perf_counter() - perf),
                }
            )
        if started is None or message.actor_name not in FINISHER_ACTORS:
            self.recorder.delivery(None, cpu)  # note the command count and the CPU
            return
        wall, perf, _ = started
        self.recorder.delivery(
            {
                "k": commit_of(message),
                "t0": wall,
                "t1": wall + (time.perf_counter() - perf),
                "c": cpu,
                "o": outcome,
                "p": os.getpid(),
            },
            cpu,
        )


class HolderTracker(RunTimer):
    """Records when admitted finisher deliveries run (inside the gate's slot)."""

    def __init__(self, recorder: Recorder) -> None:
        super().__init__(FINISHER_ACTORS)
        self.recorder = recorder

    def ran(self, message: Any, started: float, ended: float) -> None:
        self.recorder.holder(commit_of(message), started, ended)
