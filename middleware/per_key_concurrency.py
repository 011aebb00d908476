"""Run at most N messages of an actor at once per key, deferring the rest.

An actor opts in with ``concurrency_key``, a callable of the message's
``(args, kwargs)`` returning the key (a ``str``), or None for no gate. In
``before_process_message`` the gate takes a slot of the key with one Lua
script (:mod:`middleware.gate_leases`). Over the limit, a copy of the message
is enqueued with a short jittered delay and ``SkipMessage`` is raised, so
the original is acked. The copy keeps the message id and every option,
``retries`` included, except two of its own: ``concurrency_deferrals`` and
``concurrency_first_deferred_at`` (ms). A deferral is never a failure nor a
``Retry``, so the Retries budget is untouched: an actor with
``max_retries=0`` loses nothing however often it is deferred.

Failing closed. Dramatiq logs and swallows a plain exception raised in a
before-hook and then runs the actor, here ungated. So every error of the
gate's Redis call is caught and the message is deferred, never run.

A deferred copy that cannot be enqueued: the original's ack is held back
until it is, see :mod:`middleware.gate_deferral`.

Key functions. A key function that raises, or returns neither a non-empty
``str`` nor None, cannot be gated: the message is dead-lettered with the
reason in one error line (as a malformed message, not retried). None means
"no gate for this message". Put ``ArgumentValidation`` before the gate so
that messages with unfit arguments are refused before their key is computed.

Coalescing (``concurrency_coalesce=True``) is for actors whose messages of
one key are fungible: running any one of them, after a message was
received, does all the work that message asked for (the upload finisher
merges everything pending for its commit when it runs). While a deferred copy
for the key is pending, a further over-limit message is acked without a copy.
Why this loses nothing:

1. The pending copy is marked in the key's sorted set by its message id
   (``p:<id>``) in the same atomic script that decides it is over the limit;
   a message is coalesced only if a marker of another message is present.
2. The marker is removed only by the script in which that copy takes a slot,
   i.e. when it starts to run. So every message coalesced under it was
   received (its work recorded) before the copy starts, and the copy's run
   does that work too. If the copy is over the limit again, it is deferred
   again and keeps its marker; it is never coalesced under itself.
3. The copy itself cannot vanish: it is enqueued before its original is acked
   (see :mod:`middleware.gate_deferral`), and if its worker dies the
   original is redelivered with the same message id, which the marker
   recognises.
4. The marker expires after ``pending_ttl_ms``, so a copy lost to something
   outside the gate (a purged queue, a copy dead-lettered by ``AgeLimit``)
   stops covering others after that time; an expired marker only means more
   copies. Once the copy runs, it is an ordinary message: if it fails, Retries
   retries it (the coalesced work with it), as it would any of them.

Put the gate after Dramatiq's ``Prometheus`` middleware: a message the gate
skips never reaches the before-hooks of later middleware, but Dramatiq calls
the after-hooks of all of them, so a Prometheus placed after the gate would
count down in-progress messages it never counted up. Add the gate before any
actor is declared, so Dramatiq validates the actor options.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from typing import Any

import dramatiq
from dramatiq.logging import get_logger
from dramatiq.middleware import Middleware, MiddlewareError, SkipMessage

from middleware.gate_deferral import WORKER_LOGGER, Deferrals
from middleware.gate_heartbeat import Holding, LeaseHeartbeat
from middleware.gate_leases import Decision, GateLeases, new_token
from middleware.gate_metrics import GateMetrics
from middleware.gate_options import FIRST_DEFERRED_AT, GateSettings, UngateableMessageError

#: Prefix of every gate key; the Redis key is ``<key_prefix>:{<key>}``.
DEFAULT_KEY_PREFIX = "dramatiq:gate"

#: Holders per key when the actor does not say.
DEFAULT_LIMIT = 1

#: Base delay of a deferred copy, in milliseconds.
DEFAULT_DEFER_DELAY_MS = 500

#: Random extra delay of a deferred copy, up to this many milliseconds.
DEFAULT_DEFER_JITTER_MS = 500

#: Lease of a holder, in ms; renewed every third of it while the actor runs.
DEFAULT_LEASE_MS = 30_000

#: How long a coalescing marker covers others without its copy coming back, in ms.
DEFAULT_PENDING_TTL_MS = 60_000

#: A message deferred for longer than this (ms since its first deferral) is warned about.
DEFAULT_WARN_DEFERRED_AFTER_MS = 300_000


class PerKeyConcurrency(Middleware):
    """At most ``concurrency_limit`` running messages per actor and key; defer the rest."""

    def __init__(
        self,
        *,
        client: Any,
        key_prefix: str = DEFAULT_KEY_PREFIX,
        default_limit: int = DEFAULT_LIMIT,
        defer_delay_ms: int = DEFAULT_DEFER_DELAY_MS,
        defer_jitter_ms: int = DEFAULT_DEFER_JITTER_MS,
        lease_ms: int = DEFAULT_LEASE_MS,
        pending_ttl_ms: int = DEFAULT_PENDING_TTL_MS,
        warn_deferred_after_ms: int = DEFAULT_WARN_DEFERRED_AFTER_MS,
        registry: Any = None,
    ) -> None:
        self.logger = get_logger(__name__, type(self))
        self.key_prefix = key_prefix
        self.defaults = GateSettings(
            limit=default_limit,
            delay_ms=defer_delay_ms,
            jitter_ms=defer_jitter_ms,
            lease_ms=lease_ms,
            coalesce=False,
        )
        self.defaults.check("constructor")
        self.pending_ttl_ms = pending_ttl_ms
        self.warn_deferred_after_ms = warn_deferred_after_ms
        self.leases = GateLeases(client)
        self.metrics = GateMetrics(registry)
        self.heartbeat = LeaseHeartbeat(self.leases, on_lost=self._lease_lost)
        self.deferrals = Deferrals(
            self.logger, self.metrics, warn_deferred_after_ms=warn_deferred_after_ms
        )
        # Slots held, by the identity of the delivery (MessageProxy) they were taken for.
        self._held: dict[int, Holding] = {}
        self._held_lock = threading.Lock()

    @property
    def actor_options(self) -> set[str]:
        return GateSettings.ACTOR_OPTIONS

    def redis_key(self, key: str) -> str:
        """The gate's Redis key for ``key``, hash-tagged for Redis Cluster."""
        return f"{self.key_prefix}:{{{key}}}"

    def before_declare_actor(self, broker: dramatiq.Broker, actor: Any) -> None:
        GateSettings.check_actor_options(actor.actor_name, actor.options)

    def before_worker_boot(self, broker: dramatiq.Broker, worker: Any) -> None:
        logging.getLogger(WORKER_LOGGER).addFilter(self.deferrals.quiet)
        names = [type(m).__name__ for m in broker.middleware]
        if "Prometheus" in names and names.index("Prometheus") > broker.middleware.index(self):
            self.logger.warning(
                "PerKeyConcurrency sits before Prometheus: every deferral will skip Prometheus's "
                "before-hook but not its after-hook, and corrupt its in-progress gauge."
            )

    def after_worker_shutdown(self, broker: dramatiq.Broker, worker: Any) -> None:
        logging.getLogger(WORKER_LOGGER).removeFilter(self.deferrals.quiet)
        self.heartbeat.stop()

    def before_process_message(self, broker: dramatiq.Broker, message: Any) -> None:
        try:
            actor = broker.get_actor(message.actor_name)
        except dramatiq.errors.ActorNotFound:
            return  # the worker reports unknown actors itself
        try:
            key = GateSettings.key_of(actor.options, message)
            if key is None:
                return
            settings = GateSettings.lookup(actor.options, message.options, self.defaults)
        except UngateableMessageError as exc:
            self.logger.error(
                "Dead-lettering message %s of actor %s: cannot gate it: %s",
                message.message_id,
                message.actor_name,
                exc,
            )
            message.fail()
            raise SkipMessage(str(exc)) from exc
        started = time.perf_counter()
        try:
            self._decide(broker, message, key, settings)
        except MiddlewareError:
            raise
        except Exception as exc:  # a bug; Dramatiq would swallow it and run ungated
            self.logger.exception("Gate failed on key %r; deferring message.", key)
            self._release(message)
            self.deferrals.defer(broker, message, key, settings, holders=-1)
            raise SkipMessage("gate failed: deferred") from exc
        finally:
            elapsed = time.perf_counter() - started
            self.metrics.decision.labels(message.actor_name).observe(elapsed)

    def _decide(
        self, broker: dramatiq.Broker, message: Any, key: str, settings: GateSettings
    ) -> None:
        redis_key = self.redis_key(key)
        token = new_token(message.message_id, uuid.uuid4().hex[:12])
        try:
            outcome = self.leases.acquire(
                redis_key,
                token,
                limit=settings.limit,
                lease_ms=settings.lease_ms,
                message_id=message.message_id,
                coalesce=settings.coalesce,
                pending_ttl_ms=self.pending_ttl_ms,
            )
        except Exception as exc:  # fail closed: never run ungated
            self.metrics.redis_errors.labels(message.actor_name).inc()
            self.logger.warning(
                "Gate on key %r unavailable (%s): deferring message %s.",
                key,
                exc,
                message.message_id,
            )
            self.deferrals.defer(broker, message, key, settings, holders=-1)
            raise SkipMessage("gate unavailable: deferred") from exc
        if outcome.reclaimed:
            self.metrics.reclaimed.labels(message.actor_name).inc(outcome.reclaimed)
            self.logger.warning(
                "Reclaimed %d expired lease(s) on key %r: a holder died or stalled.",
                outcome.reclaimed,
                key,
            )
        if outcome.decision is Decision.ACQUIRED:
            self._hold(message, key, redis_key, token, settings)
            return
        if outcome.decision is Decision.COALESCE:
            self.metrics.coalesced.labels(message.actor_name).inc()
            self.logger.debug(
                "Coalesced message %s on key %r: %d of %d running, a deferred copy is pending.",
                message.message_id,
                key,
                outcome.holders,
                settings.limit,
            )
            self.deferrals.quiet.expect_skip(message)
            raise SkipMessage("coalesced into a pending deferred copy")
        self.deferrals.defer(broker, message, key, settings, outcome.holders)
        raise SkipMessage("over the per-key concurrency limit: deferred")

    def _hold(
        self, message: Any, key: str, redis_key: str, token: str, settings: GateSettings
    ) -> None:
        holding = Holding(message, message.actor_name, key, redis_key, token, settings.lease_ms)
        with self._held_lock:
            self._held[id(message)] = holding
        self.heartbeat.add(holding)
        self.metrics.acquired.labels(message.actor_name).inc()
        self.metrics.holders.labels(message.actor_name).inc()
        first = message.options.get(FIRST_DEFERRED_AT)
        if isinstance(first, int | float):
            age = max(0.0, time.time() - first / 1000)
            self.metrics.deferral_age.labels(message.actor_name).observe(age)

    def before_ack(self, broker: dramatiq.Broker, message: Any) -> None:
        self.deferrals.before_ack(broker, message)

    def before_nack(self, broker: dramatiq.Broker, message: Any) -> None:
        self.deferrals.forget(message)

    def after_process_message(
        self,
        broker: dramatiq.Broker,
        message: Any,
        *,
        result: Any = None,
        exception: BaseException | None = None,
    ) -> None:
        self._release(message)

    def after_skip_message(self, broker: dramatiq.Broker, message: Any) -> None:
        self._release(message)

    def _release(self, message: Any) -> None:
        """Give back the slot taken for this very delivery, and nothing else.

        Dramatiq calls the after-hooks of every middleware, also for a message
        another middleware skipped before the gate saw it; such a message has
        no entry here, so nobody else's slot is released.
        """
        with self._held_lock:
            holding = self._held.get(id(message))
            if holding is None or holding.message is not message:
                return
            del self._held[id(message)]
        self._give_back(holding)

    def _give_back(self, holding: Holding) -> None:
        self.heartbeat.forget(holding)
        self.metrics.holders.labels(holding.actor_name).dec()
        try:
            removed = self.leases.release(holding.redis_key, holding.token)
        except Exception as exc:
            self.logger.warning(
                "Could not release the slot on key %r (%s); its lease frees it in %d ms.",
                holding.key,
                exc,
                holding.lease_ms,
            )
            return
        self.metrics.released.labels(holding.actor_name).inc()
        if not removed and not holding.lost:
            self._lease_lost(holding)

    def _lease_lost(self, holding: Holding) -> None:
        self.metrics.lost.labels(holding.actor_name).inc()
        self.logger.warning(
            "Lease of message %s on key %r expired while it ran: renewals did not reach Redis.",
            holding.message.message_id,
            holding.key,
        )
