"""Run at most N messages of an actor at once per key; defer the rest.

An actor opts in with ``concurrency_key``, a function called like the actor
that returns the key (a non-empty ``str``) or None for "no gate". Before the
actor runs, the backend takes a slot of the key in one atomic step; over the
limit, a delayed copy of the message is enqueued and ``SkipMessage`` acks
the original. Why this never runs more than the limit, never loses a
message, and never makes ``AgeLimit`` or ``Retries`` drop work:
``docs/gate.md``.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from typing import Any

from dramatiq import Actor, Broker, Message, Worker
from dramatiq.broker import MessageProxy
from dramatiq.common import q_name
from dramatiq.errors import ActorNotFound
from dramatiq.logging import get_logger
from dramatiq.middleware import Middleware, SkipMessage
from dramatiq.middleware.prometheus import Prometheus

from middleware.gate._deferrals import Deferrals
from middleware.gate._leases import Holding, Leases
from middleware.gate._metrics import GateMetrics, Reporting
from middleware.gate._options import (
    ACTOR_OPTIONS,
    DEBOUNCED,
    DEFAULT_DEBOUNCE_MS,
    DEFAULT_DELAY_MS,
    DEFAULT_JITTER_MS,
    DEFAULT_KEY_PREFIX,
    DEFAULT_LEASE_MS,
    DEFAULT_LIMIT,
    DEFAULT_PENDING_TTL_MS,
    DEFAULT_WARN_DEFERRED_AFTER_MS,
    DEFERRALS,
    FIRST_DEFERRED_AT,
    KEEP_TIMESTAMP,
    KEY,
    MARKED_AT_ENQUEUE,
    SKIP_IF_PENDING,
    DeferralFailedError,
    GateConfigurationError,
    GateOptions,
    Ungateable,
    is_observed,
    key_of,
    marker_ttl_ms,
)
from middleware.gate.backends import (
    ACQUIRED,
    DEBOUNCE,
    DEFER,
    SKIPPED,
    GateBackend,
    RedisBackend,
)
from middleware.gate.backends.base import holder_token


class PerKeyConcurrency(Middleware):
    """At most ``concurrency_limit`` running messages per actor and key; defer the rest.

    Each ``concurrency_*`` parameter is also an actor option and a message
    option of the same name; the message's wins, then the actor's, then this
    default. Options are checked when the actor is declared, so add the gate
    before declaring actors, after Dramatiq's ``Prometheus``, ``AgeLimit``
    and any argument validation. The design and why it loses nothing:
    ``docs/gate.md``.

    Parameters:
      backend(GateBackend): Where leases and markers live: a
        :class:`RedisBackend`, or a :class:`StubBackend` for tests.
      client(redis.Redis | redis.cluster.RedisCluster): Shorthand for
        ``backend=RedisBackend(client)``; give one of the two.
      key_prefix(str): Prefix of the gate's keys, ``<key_prefix>:{<key>}``.
      concurrency_limit(int): Messages of one actor and key running at once.
      concurrency_delay_ms(int): Delay of a deferred copy, in milliseconds.
      concurrency_jitter_ms(int): Up to this much random extra delay, in ms.
      concurrency_lease_ms(int): A holder's lease, renewed while it runs.
      concurrency_skip_if_pending(bool): The actor's messages of one key are
        fungible: an over-limit message is acked without running while
        another's deferred copy is pending for its key and queue, and
        :meth:`enqueue` drops a message such a copy covers.
      concurrency_debounce_ms(int): Batch a key's arrivals for this many ms
        into one run (needs ``concurrency_skip_if_pending``); 0 is off.
      concurrency_keep_timestamp(bool): A deferred copy keeps its
        message's ``message_timestamp``, so ``AgeLimit``'s ``max_age``
        counts from the send, deferrals included. Off by default: the
        copy's timestamp is when it is due, and ``max_age`` bounds each
        wait in the queue (``docs/gate.md``, "Deferral").
      pending_ttl_ms(int): How long a pending copy covers others at most.
      warn_deferred_after_ms(int): Warn about a message deferred this long.
      metrics(bool): Export Prometheus metrics, labelled by ``queue_name``
        and ``actor_name``, next to Dramatiq's. Off by default.
      registry(prometheus_client.CollectorRegistry): Where the metrics are
        registered; a private one by default.

    Example::

        >>> broker.add_middleware(PerKeyConcurrency(client=redis.Redis()))
        >>> @dramatiq.actor(
        ...     concurrency_key=lambda repoid, commitid: f"{repoid}:{commitid}",
        ...     concurrency_limit=2,
        ... )
        ... def finish(repoid, commitid):
        ...     ...
    """

    def __init__(
        self,
        *,
        backend: GateBackend | None = None,
        client: Any = None,
        key_prefix: str = DEFAULT_KEY_PREFIX,
        concurrency_limit: int = DEFAULT_LIMIT,
        concurrency_delay_ms: int = DEFAULT_DELAY_MS,
        concurrency_jitter_ms: int = DEFAULT_JITTER_MS,
        concurrency_lease_ms: int = DEFAULT_LEASE_MS,
        concurrency_skip_if_pending: bool = False,
        concurrency_debounce_ms: int = DEFAULT_DEBOUNCE_MS,
        concurrency_keep_timestamp: bool = False,
        pending_ttl_ms: int = DEFAULT_PENDING_TTL_MS,
        warn_deferred_after_ms: int = DEFAULT_WARN_DEFERRED_AFTER_MS,
        metrics: bool = False,
        registry: Any = None,
    ) -> None:
        if (backend is None) == (client is None):
            raise GateConfigurationError("PerKeyConcurrency takes a backend or a client, not both")
        self.logger = get_logger(__name__, type(self))
        self.key_prefix = key_prefix
        self.defaults = GateOptions.of(
            "constructor",
            {
                "concurrency_limit": concurrency_limit,
                "concurrency_delay_ms": concurrency_delay_ms,
                "concurrency_jitter_ms": concurrency_jitter_ms,
                "concurrency_lease_ms": concurrency_lease_ms,
                "concurrency_debounce_ms": concurrency_debounce_ms,
                SKIP_IF_PENDING: concurrency_skip_if_pending,
                KEEP_TIMESTAMP: concurrency_keep_timestamp,
            },
            GateOptions(1, 0, 0, 1, False),
        )
        self.pending_ttl_ms = pending_ttl_ms
        self.warn_deferred_after_ms = warn_deferred_after_ms
        self.backend: GateBackend = backend if backend is not None else RedisBackend(client)
        self.metrics = GateMetrics(enabled=metrics or registry is not None, registry=registry)
        self.reporting = Reporting()
        self.leases = Leases(
            self.backend, logger=self.logger, metrics=self.metrics, reporting=self.reporting
        )
        self.heartbeat = self.leases.heartbeat
        # By the identity of the delivery: the deliveries decided on.
        self._decided: dict[int, MessageProxy] = {}
        self._lock = threading.Lock()
        self.deferrals = Deferrals(
            logger=self.logger,
            metrics=self.metrics,
            reporting=self.reporting,
            backend=self.backend,
            backend_key=self.backend_key,
            pending_ttl_ms=pending_ttl_ms,
            warn_deferred_after_ms=warn_deferred_after_ms,
        )

    @property
    def actor_options(self) -> set[str]:
        return set(ACTOR_OPTIONS)

    def backend_key(self, key: str) -> str:
        """The backend's key for ``key``, hash-tagged for Redis Cluster (one slot per key)."""
        return f"{self.key_prefix}:{{{key}}}"

    def before_declare_actor(self, broker: Broker, actor: Actor[Any, Any]) -> None:
        key = actor.options.get(KEY)
        if key is not None and not callable(key):
            raise GateConfigurationError(
                f"actor {actor.actor_name}: {KEY} must be a function called like the actor"
            )
        GateOptions.of(f"actor {actor.actor_name}", actor.options, self.defaults)

    @classmethod
    def of(cls, broker: Broker) -> PerKeyConcurrency | None:
        """The gate added to ``broker``, or None if it has none.

        Example::

            >>> gate = PerKeyConcurrency.of(dramatiq.get_broker())
            >>> gate.backend.holders(gate.backend_key("42:abc")) if gate else []
        """
        return next((m for m in broker.middleware if isinstance(m, cls)), None)

    def before_worker_boot(self, broker: Broker, worker: Worker) -> None:
        self.leases.worker_booted()
        mine = broker.middleware.index(self)
        if any(isinstance(m, Prometheus) for m in broker.middleware[mine + 1 :]):
            self.logger.warning(
                "PerKeyConcurrency sits before Prometheus: every deferral will skip Prometheus's "
                "before-hook but not its after-hook, and corrupt its in-progress gauge."
            )

    def after_worker_shutdown(self, broker: Broker, worker: Worker) -> None:
        self.leases.worker_stopped()

    def enqueue(
        self, broker: Broker, message: Message[Any], *, delay: int | None = None
    ) -> Message[Any] | None:
        """Enqueue ``message`` unless a pending message of its actor, key and queue covers it.

        Coalescing at enqueue, for actors with ``concurrency_skip_if_pending``:
        one atomic step looks for a live marker of the message's actor, key
        and queue. One stands: its message has not started, and its run will
        do this message's work, so this one is dropped and None returned
        (the ``dramatiq_gate_coalesced_at_enqueue`` metric counts it). None
        stands: the message is marked pending, enqueued, and returned as
        enqueued; its marker goes when it starts to run.

        With ``concurrency_debounce_ms``, the message that finds no marker
        opens its key's window here rather than at delivery: it is enqueued
        as the copy that closes the window (``concurrency_debounced``, due in
        ``debounce_ms``), so no worker takes it once only to put it back.

        Every other message is enqueued as ``broker.enqueue`` would: of an
        ungated actor, sent with a delay, observed (results, callbacks,
        pipelines, groups), or when the backend cannot be reached.
        """
        try:
            actor = broker.get_actor(message.actor_name)
            key = key_of(actor.options, message.options, message.args, message.kwargs)
            options = GateOptions.of("message", {**actor.options, **message.options}, self.defaults)
        except (ActorNotFound, Ungateable, GateConfigurationError):
            key = None  # the worker reports (or dead-letters) it
        gate_made = DEFERRALS in message.options or DEBOUNCED in message.options
        if key is None or delay or gate_made or not options.skip_if_pending:
            return broker.enqueue(message, delay=delay)
        if is_observed(broker, actor, message):
            return broker.enqueue(message, delay=delay)
        queue = q_name(message.queue_name)
        window_ms = options.debounce_ms
        try:
            pending = self.backend.mark_unless_pending(
                self.backend_key(key),
                message_id=message.message_id,
                pending_ttl_ms=marker_ttl_ms(self.pending_ttl_ms, window_ms),
                actor_name=message.actor_name,
                queue_name=queue,
            )
        except Exception as exc:  # sending is never wrong: send it unmarked
            with self.reporting:
                self.logger.warning(
                    "Gate on key %r unavailable at enqueue (%s): sending message %s as is.",
                    key,
                    exc,
                    message.message_id,
                )
            return broker.enqueue(message, delay=delay)
        if pending:
            with self.reporting:
                self.metrics.count_for("coalesced_at_enqueue", queue, message.actor_name)
                self.logger.debug(
                    "Dropping message %s on key %r at enqueue: message %s is pending and will "
                    "do its work.",
                    message.message_id,
                    key,
                    pending,
                )
            return None
        try:
            if window_ms:
                return self.deferrals.open_window(
                    broker, message, window_ms, keep_timestamp=options.keep_timestamp
                )
            return broker.enqueue(message.copy(options={MARKED_AT_ENQUEUE: True}), delay=delay)
        except BaseException:
            self.deferrals.forget_marker(key, message.message_id, message.actor_name, queue)
            raise

    def before_process_message(self, broker: Broker, message: MessageProxy) -> None:
        try:
            actor = broker.get_actor(message.actor_name)
        except ActorNotFound:
            return  # the worker reports unknown actors itself
        try:
            key = key_of(actor.options, message.options, message.args, message.kwargs)
            if key is None:
                return
            options = GateOptions.of("message", {**actor.options, **message.options}, self.defaults)
        except (Ungateable, GateConfigurationError) as exc:
            with self.reporting:
                self.logger.error(
                    "Dead-lettering message %s of actor %s: cannot gate it: %s",
                    message.message_id,
                    message.actor_name,
                    exc,
                )
            message.fail()
            raise SkipMessage(str(exc)) from exc
        with self._lock:
            self._decided[id(message)] = message
        if options.skip_if_pending and is_observed(broker, actor, message):
            options = replace(options, skip_if_pending=False, debounce_ms=0)
        started = time.perf_counter()
        try:
            decision, holders, pending = self._decide(message, key, options)
        except Exception:  # a bug of the gate; Dramatiq would swallow it and run ungated
            with self.reporting:
                self.logger.exception("Gate failed on key %r; deferring message.", key)
            self.leases.release(message)
            decision, holders, pending = DEFER, -1, ""
        with self.reporting:
            self.metrics.observe("decision", message, time.perf_counter() - started)
        if decision == ACQUIRED:
            return
        if decision == SKIPPED:
            with self.reporting:
                self.metrics.count("skipped_pending", message)
                self.logger.debug(
                    "Skipping message %s on key %r: %d of %d running and the deferred copy of "
                    "message %s is pending; it will do this message's work.",
                    message.message_id,
                    key,
                    holders,
                    options.limit,
                    pending,
                )
            raise SkipMessage("skipped: a pending deferred copy of its key does its work")
        try:
            self.deferrals.defer(
                broker, message, key, options, holders, debounce=decision == DEBOUNCE
            )
        except DeferralFailedError:
            raise  # the message is failed with it: the worker dead-letters it with that reason
        except Exception as exc:  # a copy that cannot even be made: never run ungated
            self.deferrals.forget_marker(
                key, message.message_id, message.actor_name, q_name(message.queue_name)
            )
            failure = DeferralFailedError(
                f"no deferred copy can be made: {type(exc).__name__}: {exc}"
            )
            message.fail()
            message.stuff_exception(failure)
            with self.reporting:
                self.logger.exception(
                    "Dead-lettering message %s on key %r: no deferred copy can be made.",
                    message.message_id,
                    key,
                )
            raise failure from exc
        if decision == DEBOUNCE:
            raise SkipMessage("debounced: a copy runs when the key's window closes")
        raise SkipMessage("over the per-key concurrency limit: deferred")

    def _decide(
        self, message: MessageProxy, key: str, options: GateOptions
    ) -> tuple[int, int, str]:
        backend_key = self.backend_key(key)
        token = holder_token(message.message_id)
        try:
            decision, holders, reclaimed, pending = self.backend.acquire(
                backend_key,
                token,
                limit=options.limit,
                lease_ms=options.lease_ms,
                message_id=message.message_id,
                skip_if_pending=options.skip_if_pending,
                pending_ttl_ms=self.pending_ttl_ms,
                debounce_ms=0 if message.options.get(DEBOUNCED) else options.debounce_ms,
                actor_name=message.actor_name,
                queue_name=q_name(message.queue_name),
            )
        except Exception as exc:  # fail closed: never run ungated
            with self.reporting:
                self.metrics.count("redis_errors", message)
                self.logger.warning(
                    "Gate on key %r unavailable (%s): deferring message %s.",
                    key,
                    exc,
                    message.message_id,
                )
            return DEFER, -1, ""
        if reclaimed:
            with self.reporting:
                self.metrics.count("leases_reclaimed", message, reclaimed)
                self.logger.warning(
                    "Reclaimed %d expired lease(s) on key %r: a holder died or stalled.",
                    reclaimed,
                    key,
                )
        if decision == ACQUIRED:
            self.leases.hold(Holding(message, key, backend_key, token, options.lease_ms))
            with self.reporting:
                first = message.options.get(FIRST_DEFERRED_AT)
                if isinstance(first, int | float):
                    age = max(0.0, time.time() - first / 1000)
                    self.metrics.observe("deferral_age", message, age)
        return decision, holders, pending

    def after_process_message(
        self,
        broker: Broker,
        message: MessageProxy,
        *,
        result: Any = None,
        exception: BaseException | None = None,
    ) -> None:
        with self._lock:
            self._decided.pop(id(message), None)
        self.leases.release(message)

    def before_ack(self, broker: Broker, message: MessageProxy) -> None:
        """Enqueue a held-back copy before its original is acked (see ``Deferrals``)."""
        self.deferrals.enqueue_held(broker, message)

    def before_nack(self, broker: Broker, message: MessageProxy) -> None:
        self.deferrals.drop_held(message)

    def after_skip_message(self, broker: Broker, message: MessageProxy) -> None:
        with self._lock:
            decided = self._decided.pop(id(message), None)
        if decided is not message and any(
            name in message.options for name in (MARKED_AT_ENQUEUE, DEFERRALS, DEBOUNCED)
        ):
            # Skipped (or dead-lettered, by AgeLimit say) before the gate saw
            # it: it will never run, so its marker (set at enqueue, or as a
            # pending copy) must cover no other message.
            self.deferrals.unmark_unseen(broker, message)
        self.leases.release(message)
