"""The finisher of each baseline strategy, on the real pipeline.

``covworker`` is the real app (:func:`app.runtime.worker.build_app`), unchanged: the
per-commit gate in front of the cooperative finisher. The three baselines
replace only the finisher actor, declared as ``bench_finisher`` on the same
broker; the real processor sends to it (``app.actors.upload_finisher``),
and it merges with the real :func:`~app.pipeline.finisher.merge_pass` and
notifies through the real ``notify`` actor, so the comparison is fair:

- ``lock-wait`` (Codecov's worker before its fixes): no gate; each finisher
  blocks on the commit lock for up to the blocking timeout and merges one
  upload of the processed set (its own, in count). A timeout is a ``Retry``
  through the Retries budget.
- ``counter-gate`` (the seed design): INCR + EXPIRE a per-commit counter;
  over the limit, DECR and ``Retry`` through the Retries budget (when the
  budget runs out the message is dead-lettered, and its upload is lost if no
  later finisher comes). Admitted finishers block on the lock and merge the
  whole processed set.
- ``rate-limiter``: Dramatiq's ``ConcurrentRateLimiter`` per commit, its
  ``RateLimitExceeded`` retried through the Retries budget; admitted
  finishers as in ``counter-gate``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

import dramatiq
from dramatiq.rate_limits import ConcurrentRateLimiter
from dramatiq.rate_limits.backends import RedisBackend
from redis.exceptions import LockError
from redis.lock import Lock

from app.errors import MessageError
from app.pipeline.finisher import merge_pass
from app.runtime.worker import CovworkerApp
from benchmarks.stampede.config import BenchWorkerSettings
from benchmarks.stampede.instrument import Recorder

#: Actor name of every baseline finisher.
BASELINE_FINISHER = "bench_finisher"


class LockTimeout(dramatiq.Retry):
    """The commit lock stayed busy for the whole blocking timeout: retry later."""


class OverLimit(dramatiq.Retry):
    """The per-commit counter is at its limit: retry later (spends the budget)."""


class Baseline:
    """The baseline finishers of one worker process."""

    def __init__(self, app: CovworkerApp, bench: BenchWorkerSettings, recorder: Recorder) -> None:
        self.app = app
        self.services = app.services
        self.bench = bench
        self.recorder = recorder

    # -- shared steps ---------------------------------------------------------------

    def _blocking_lock(self, repoid: int, commitid: int) -> Lock:
        state = self.services.state
        return self.services.redis.lock(
            state.keys(repoid, commitid).lock,
            timeout=self.services.settings.finisher_lock_timeout_s,
            blocking=True,
            blocking_timeout=self.bench.lock_wait_s,
        )

    def _merge(self, repoid: int, commitid: int, *, whole_set: bool) -> None:
        """Block on the lock; merge one upload, or the whole processed set; notify if settled."""
        state = self.services.state
        lock = self._blocking_lock(repoid, commitid)
        if not lock.acquire():
            waited = self.bench.lock_wait_s
            raise LockTimeout(f"commit {repoid}:{commitid}: lock busy for {waited}s")
        passes = merged = redriven = 0
        try:
            limit = self.services.settings.merge_batch_size if whole_set else 1
            while ids := state.processed_ids(repoid, commitid, limit):
                result = merge_pass(self.services, repoid, commitid, ids, lock)
                passes += 1
                merged += len(result.merged)
                redriven += len(result.redrive)
                for upload_id in result.redrive:
                    self.actors.upload_processor.send(upload_id)
                if not whole_set:
                    break
        finally:
            # Expired under a slow merge: the Postgres fence kept the merge exact.
            with suppress(LockError):
                lock.release()
        state.count(
            repoid,
            commitid,
            finisher_runs=1,
            lock_acquisitions=1,
            merge_passes=passes,
            uploads_merged=merged,
            redriven=redriven,
        )
        processing, processed = state.counts(repoid, commitid)
        if processing == 0 and processed == 0:
            self.actors.notify.send(repoid, commitid)

    @contextmanager
    def _holding(self, repoid: int, commitid: int) -> Iterator[None]:
        started = time.time()
        try:
            yield
        finally:
            self.recorder.holder(f"{repoid}:{commitid}", started, time.time())

    # -- the strategies ----------------------------------------------------------------

    def lock_wait(self, repoid: int, commitid: int) -> None:
        with self._holding(repoid, commitid):
            self._merge(repoid, commitid, whole_set=False)

    def counter_gate(self, repoid: int, commitid: int) -> None:
        client = self.services.redis
        key = f"{self.services.settings.namespace}:bench:counter:{{{repoid}:{commitid}}}"
        with client.pipeline(transaction=False) as pipe:
            pipe.incr(key)
            pipe.expire(key, max(1, round(self.bench.counter_ttl_s)))
            running, _ = pipe.execute()
        if int(running) > self.bench.limit:
            client.decr(key)
            raise OverLimit(f"commit {repoid}:{commitid}: {running - 1} finishers running")
        try:
            with self._holding(repoid, commitid):
                self._merge(repoid, commitid, whole_set=True)
        finally:
            client.decr(key)

    def rate_limiter(self, repoid: int, commitid: int) -> None:
        limiter = ConcurrentRateLimiter(
            RedisBackend(client=self.services.redis),
            f"{self.services.settings.namespace}:bench:rl:{repoid}:{commitid}",
            limit=self.bench.limit,
            ttl=max(1, round(self.bench.counter_ttl_s * 1000)),
        )
        with limiter.acquire(raise_on_failure=True), self._holding(repoid, commitid):
            self._merge(repoid, commitid, whole_set=True)

    def declare(self, actors: Any) -> dramatiq.Actor[Any, Any]:
        """Declare the strategy's finisher and make the processor (``actors``,
        :mod:`app.actors` declared on ``self.app``) send to it."""
        self.actors = actors
        bodies: dict[str, Callable[[int, int], None]] = {
            "lock-wait": self.lock_wait,
            "counter-gate": self.counter_gate,
            "rate-limiter": self.rate_limiter,
        }
        body = bodies[self.bench.strategy]

        def bench_finisher(repoid: int, commitid: int) -> None:
            body(repoid, commitid)

        actor = dramatiq.actor(
            actor_name=BASELINE_FINISHER,
            broker=self.app.broker,
            queue_name=self.services.settings.queue_name,
            throws=(MessageError,),
        )(bench_finisher)
        self.actors.upload_finisher = actor  # what send_finisher sends, at call time
        return actor
