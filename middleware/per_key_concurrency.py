"""Run at most N messages of an actor at once per key; defer the rest.

An actor opts in with ``concurrency_key``, a function called like the actor
(``fn(*args, **kwargs)``) that returns the key, a non-empty ``str``, or None
for "no gate". Before the actor runs, one Lua script (``lua/gate_acquire.lua``)
takes a slot of the key. Over the limit, a copy of the message is enqueued
with a short, jittered delay and ``SkipMessage`` acks the original. The copy
keeps the message id and every option, ``retries`` included, plus two of
its own, ``concurrency_deferrals`` and ``concurrency_first_deferred_at``
(ms): a deferral is neither a failure nor a ``Retry``, so an actor with
``max_retries=0`` loses nothing however often it is deferred.

Leases. A slot is a member of the key's sorted set scored by its lease
expiry in ms of Redis server time. A heartbeat thread renews the slots of
this process every third of their lease; a holder killed with SIGKILL stops
renewing and its slot is purged by the next acquire after its own lease ran
out, however busy the key is.

Failing closed. Dramatiq logs and swallows a plain exception raised in a
before-hook and then runs the actor, here ungated. So any error of the
gate's Redis call, or of the gate itself, defers the message. Metrics and
log lines are reported after the decision and can never change it.

A copy that cannot be enqueued. On a connection error the original is
still skipped but its ack is held back: ``before_ack`` raises
:class:`DeferralNotEnqueuedError`, a ``BrokerConnectionError``, so the
worker retries the ack (and the enqueue) until the broker answers; if the
worker dies meanwhile, the unacked original is redelivered. Any other error
can never succeed (a delay past the broker's maximum, say): the message is
dead-lettered with the reason, and the worker thread moves on.

Deferral and ``max_age``. A deferred copy's ``message_timestamp`` is the
time it becomes due, so Dramatiq's ``AgeLimit`` measures each wait in the
queue, not the time the gate held the message back: the gate never makes
``AgeLimit`` drop work. A message deferred for longer than
``warn_deferred_after_ms`` is warned about instead.

``concurrency_skip_if_pending=True`` is for actors whose messages of one key
are fungible: running any one of them, after a message was received, does
all the work that message asked for (covworker's finisher merges everything
pending for its commit). Over the limit, while another message's deferred
copy is pending for the key, a message is acked without running (a debug
line and the ``dramatiq_gate_skipped_pending`` metric each time). Why this
loses nothing:

1. The pending copy is marked ``p:<actor>:<message id>`` in the same atomic
   script that finds it over the limit; a message is skipped only under
   another message's marker of its own actor (actors may share a key and
   its limit, but never do each other's work).
2. The marker goes only when its copy takes a slot, i.e. starts to run. So
   every message skipped under it was received before the copy runs, and the
   copy's run does its work too. Deferred again, the copy keeps its marker.
3. The copy is enqueued before its original is acked; if its worker dies,
   the original is redelivered with the same id, which the marker knows.
4. The marker expires after ``pending_ttl_ms``, so a copy lost to something
   outside the gate (a purged queue) stops covering others; an expired
   marker only means more copies.

Markers are per queue (``p:<queue>/<message id>``): a copy covers only
messages of its own queue, whose copies run in the same order, so a copy
waiting behind a long queue never holds back a message sent to a faster
one (covworker sends a commit's last finisher ahead, on its finisher
queue). Each queue's markers obey 1-4 on their own.

``concurrency_debounce_ms=D`` (with ``concurrency_skip_if_pending``: the
same fungible actors) batches a key's arrivals: the first message of a key
opens a window of D ms: a copy of it is enqueued with delay D, marked
pending (the ``p:<actor>:<message id>`` marker above) in the same script, and the
original is acked. Every message of the key that arrives while the marker
stands is acked without running, as under the limit. After D ms the copy
runs (through the limit as usual) and does the work of all of them: one
run for a window's arrivals instead of one each, and no message waits
longer than D plus the limit's own deferrals. It loses nothing for the
reasons 1-4 above, and:

5. The window is opened only by the script that finds no other message's
   marker, so at most one copy is pending per key, actor and queue; its marker goes when
   the copy starts, so a message arriving after that opens a new window
   (its work is never left to a run that had already started).
6. A worker killed inside the window loses nothing: the copy is enqueued
   (a delayed message in the broker) before its original is acked; killed
   before that, the original is redelivered with the same id, finds its own
   marker and enqueues the copy again (two copies of one id at worst, which
   fungible messages allow). A copy is never debounced again.

Place the gate after Dramatiq's ``Prometheus``, ``AgeLimit`` and
``ArgumentValidation`` (a skipped message never reaches later before-hooks,
but every after-hook runs) and add it before declaring actors, so their
options are checked at declaration.

Migration from covworker 0.1: the key function is called like the actor
(``lambda repoid, commitid: ...``, not ``lambda args, kwargs: ...``); the
constructor takes the actor options' names (``concurrency_limit``, not
``default_limit``; ``concurrency_delay_ms``, not ``defer_delay_ms``);
``concurrency_coalesce`` is ``concurrency_skip_if_pending``; metrics are off
unless ``metrics=True`` and labelled by ``queue_name`` and ``actor_name``.
"""

from __future__ import annotations

import contextlib
import os
import random
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import redis
from dramatiq import Actor, Broker, Message, Worker
from dramatiq.broker import MessageProxy
from dramatiq.common import current_millis, q_name
from dramatiq.errors import ActorNotFound, BrokerConnectionError
from dramatiq.logging import get_logger
from dramatiq.middleware import Middleware, MiddlewareError, SkipMessage

#: Prefix of every gate key; the Redis key is ``<key_prefix>:{<key>}`` (a Cluster hash tag).
DEFAULT_KEY_PREFIX = "dramatiq:gate"

#: Holders per key when the actor does not say.
DEFAULT_LIMIT = 1

#: Base delay of a deferred copy, in milliseconds.
DEFAULT_DELAY_MS = 500

#: Random extra delay of a deferred copy, up to this many milliseconds.
DEFAULT_JITTER_MS = 500

#: Lease of a holder, in ms; renewed every third of it while the actor runs.
DEFAULT_LEASE_MS = 30_000

#: Debounce window of a key, in ms; 0 is off (see the module docstring).
DEFAULT_DEBOUNCE_MS = 0

#: How long a pending copy's marker covers others without the copy starting, in ms.
DEFAULT_PENDING_TTL_MS = 60_000

#: A message deferred for longer than this (ms since its first deferral) is warned about.
DEFAULT_WARN_DEFERRED_AFTER_MS = 300_000

#: The longest delay Dramatiq's brokers accept (7 days); delay plus jitter must fit.
MAX_DELAY_MS = 7 * 24 * 3600 * 1000

#: Message option the gate writes: how many times this message was deferred.
DEFERRALS = "concurrency_deferrals"

#: Message option the gate writes: when it first deferred this message (ms since the epoch).
FIRST_DEFERRED_AT = "concurrency_first_deferred_at"

#: Message option the gate writes on the copy that closes a debounce window.
DEBOUNCED = "concurrency_debounced"

#: Errors of an enqueue that may succeed later; any other error never will.
TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (
    BrokerConnectionError,
    redis.ConnectionError,
    redis.TimeoutError,
    ConnectionError,
    TimeoutError,
)

_KEY = "concurrency_key"
_SKIP = "concurrency_skip_if_pending"
#: Integer options -> (field of _Options, minimum).
_INTS = {
    "concurrency_limit": ("limit", 1),
    "concurrency_delay_ms": ("delay_ms", 0),
    "concurrency_jitter_ms": ("jitter_ms", 0),
    "concurrency_lease_ms": ("lease_ms", 1),
    "concurrency_debounce_ms": ("debounce_ms", 0),
}
_ACQUIRED, _DEFER, _SKIPPED, _DEBOUNCE = 1, 2, 3, 4
#: Metrics and log lines are best effort: they come after a decision and never change it.
_REPORTING = contextlib.suppress(Exception)
_LUA = Path(__file__).parent / "lua"


class GateConfigurationError(MiddlewareError, ValueError):
    """Gate options that can never work, refused by the constructor or at declaration."""


class DeferralNotEnqueuedError(MiddlewareError, BrokerConnectionError):
    """The deferred copy is not enqueued yet: keep the original unacked and try again."""


class DeferralFailedError(MiddlewareError):
    """The deferred copy can never be enqueued: leave the original unacked, free the thread."""


class PerKeyConcurrency(Middleware):
    """At most ``concurrency_limit`` running messages per actor and key; defer the rest.

    Each ``concurrency_*`` parameter is also an actor option and a message
    option of the same name; the message's wins, then the actor's, then this
    default. Options are checked when the actor is declared.

    Parameters:
      client(redis.Redis): The Redis client that holds the leases.
      key_prefix(str): Prefix of the gate's Redis keys.
      concurrency_limit(int): Messages of one actor and key running at once.
      concurrency_delay_ms(int): Delay of a deferred copy, in milliseconds.
      concurrency_jitter_ms(int): Up to this much random extra delay, in ms.
      concurrency_lease_ms(int): A holder's lease, renewed while it runs.
      concurrency_skip_if_pending(bool): Ack an over-limit message without
        running it while another message's deferred copy is pending for its
        key. Only for actors whose messages of one key are fungible.
      concurrency_debounce_ms(int): Batch a key's arrivals for this many ms
        into one run (needs ``concurrency_skip_if_pending``); 0 is off.
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
        client: redis.Redis,
        key_prefix: str = DEFAULT_KEY_PREFIX,
        concurrency_limit: int = DEFAULT_LIMIT,
        concurrency_delay_ms: int = DEFAULT_DELAY_MS,
        concurrency_jitter_ms: int = DEFAULT_JITTER_MS,
        concurrency_lease_ms: int = DEFAULT_LEASE_MS,
        concurrency_skip_if_pending: bool = False,
        concurrency_debounce_ms: int = DEFAULT_DEBOUNCE_MS,
        pending_ttl_ms: int = DEFAULT_PENDING_TTL_MS,
        warn_deferred_after_ms: int = DEFAULT_WARN_DEFERRED_AFTER_MS,
        metrics: bool = False,
        registry: Any = None,
    ) -> None:
        self.logger = get_logger(__name__, type(self))
        self.key_prefix = key_prefix
        self.defaults = _Options.of(
            "constructor",
            {
                "concurrency_limit": concurrency_limit,
                "concurrency_delay_ms": concurrency_delay_ms,
                "concurrency_jitter_ms": concurrency_jitter_ms,
                "concurrency_lease_ms": concurrency_lease_ms,
                "concurrency_debounce_ms": concurrency_debounce_ms,
                _SKIP: concurrency_skip_if_pending,
            },
            _Options(1, 0, 0, 1, False),
            GateConfigurationError,
        )
        self.pending_ttl_ms = pending_ttl_ms
        self.warn_deferred_after_ms = warn_deferred_after_ms
        self.leases = _Leases(client)
        self.metrics = _Metrics(enabled=metrics or registry is not None, registry=registry)
        self.heartbeat = _Heartbeat(self.leases, on_lost=self._lease_lost)
        # Slots held and copies not yet enqueued, by the identity of the delivery.
        self._held: dict[int, _Holding] = {}
        self._unsent: dict[int, tuple[MessageProxy, Message[Any], int]] = {}
        self._lock = threading.Lock()
        self._warned_at: dict[str, float] = {}

    @property
    def actor_options(self) -> set[str]:
        return {_KEY, _SKIP, *_INTS}

    def redis_key(self, key: str) -> str:
        """The gate's Redis key for ``key``, hash-tagged for Redis Cluster."""
        return f"{self.key_prefix}:{{{key}}}"

    def before_declare_actor(self, broker: Broker, actor: Actor[Any, Any]) -> None:
        key = actor.options.get(_KEY)
        if key is not None and not callable(key):
            raise GateConfigurationError(
                f"actor {actor.actor_name}: {_KEY} must be a function called like the actor"
            )
        _Options.of(f"actor {actor.actor_name}", actor.options, self.defaults)

    def before_worker_boot(self, broker: Broker, worker: Worker) -> None:
        names = [type(m).__name__ for m in broker.middleware]
        if "Prometheus" in names and names.index("Prometheus") > broker.middleware.index(self):
            self.logger.warning(
                "PerKeyConcurrency sits before Prometheus: every deferral will skip Prometheus's "
                "before-hook but not its after-hook, and corrupt its in-progress gauge."
            )

    def after_worker_shutdown(self, broker: Broker, worker: Worker) -> None:
        self.heartbeat.stop()

    def before_process_message(self, broker: Broker, message: MessageProxy) -> None:
        try:
            actor = broker.get_actor(message.actor_name)
        except ActorNotFound:
            return  # the worker reports unknown actors itself
        try:
            key = self._key_of(actor.options, message)
            if key is None:
                return
            options = _Options.of("message", {**actor.options, **message.options}, self.defaults)
        except (_Ungateable, GateConfigurationError) as exc:
            with _REPORTING:
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
            decision, holders, pending = self._decide(message, key, options)
        except Exception:  # a bug of the gate; Dramatiq would swallow it and run ungated
            with _REPORTING:
                self.logger.exception("Gate failed on key %r; deferring message.", key)
            self._release(message)
            decision, holders, pending = _DEFER, -1, ""
        with _REPORTING:
            self.metrics.observe("decision", message, time.perf_counter() - started)
        if decision == _ACQUIRED:
            return
        if decision == _SKIPPED:
            with _REPORTING:
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
            self._defer(broker, message, key, options, holders, debounce=decision == _DEBOUNCE)
        except Exception as exc:  # a copy that cannot even be made: never run ungated
            message.fail()
            with _REPORTING:
                self.logger.exception(
                    "Dead-lettering message %s on key %r: no deferred copy can be made.",
                    message.message_id,
                    key,
                )
            raise SkipMessage(f"no deferred copy can be made: {exc}") from exc
        if decision == _DEBOUNCE:
            raise SkipMessage("debounced: a copy runs when the key's window closes")
        raise SkipMessage("over the per-key concurrency limit: deferred")

    def _key_of(self, actor_options: Mapping[str, Any], message: MessageProxy) -> str | None:
        if _KEY in message.options:  # a message carries a literal key, never a function
            key = message.options[_KEY]
        else:
            function = actor_options.get(_KEY)
            if function is None:
                return None
            try:
                key = function(*message.args, **message.kwargs)
            except Exception as exc:
                raise _Ungateable(f"{_KEY} raised {type(exc).__name__}: {exc}") from exc
        if key is not None and (not isinstance(key, str) or not key):
            raise _Ungateable(f"{_KEY} must give a non-empty str or None, got {key!r}")
        return key

    def _decide(self, message: MessageProxy, key: str, options: _Options) -> tuple[int, int, str]:
        redis_key = self.redis_key(key)
        token = f"h:{message.message_id}:{uuid.uuid4().hex[:12]}"
        try:
            decision, holders, reclaimed, pending = self.leases.acquire(
                redis_key,
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
            with _REPORTING:
                self.metrics.count("redis_errors", message)
                self.logger.warning(
                    "Gate on key %r unavailable (%s): deferring message %s.",
                    key,
                    exc,
                    message.message_id,
                )
            return _DEFER, -1, ""
        if reclaimed:
            with _REPORTING:
                self.metrics.count("leases_reclaimed", message, reclaimed)
                self.logger.warning(
                    "Reclaimed %d expired lease(s) on key %r: a holder died or stalled.",
                    reclaimed,
                    key,
                )
        if decision == _ACQUIRED:
            holding = _Holding(message, key, redis_key, token, options.lease_ms)
            with self._lock:
                self._held[id(message)] = holding
            self.heartbeat.add(holding)
            with _REPORTING:
                self.metrics.count("acquired", message)
                self.metrics.holders(message, +1)
                first = message.options.get(FIRST_DEFERRED_AT)
                if isinstance(first, int | float):
                    age = max(0.0, time.time() - first / 1000)
                    self.metrics.observe("deferral_age", message, age)
        return decision, holders, pending

    def _defer(
        self,
        broker: Broker,
        message: MessageProxy,
        key: str,
        options: _Options,
        holders: int,
        *,
        debounce: bool = False,
    ) -> None:
        """Enqueue a delayed copy; hold back the ack, or dead-letter, if that fails.

        ``debounce``: the copy that closes the key's window, due in
        ``debounce_ms``; not a deferral (its budget of deferrals is untouched).
        """
        now_ms = current_millis()
        deferrals = message.options.get(DEFERRALS)
        first = message.options.get(FIRST_DEFERRED_AT)
        if debounce:
            delay = options.debounce_ms
            extra: dict[str, Any] = {DEBOUNCED: True}
        else:
            deferrals = deferrals + 1 if isinstance(deferrals, int) else 1
            first = first if isinstance(first, int | float) else now_ms
            delay = options.delay_ms + random.randint(0, options.jitter_ms)
            extra = {DEFERRALS: deferrals, FIRST_DEFERRED_AT: first}
        copy = message.copy(
            message_timestamp=now_ms + delay,  # due then: AgeLimit counts from there
            options=extra,
        )
        try:
            broker.enqueue(copy, delay=delay)
        except TRANSIENT_ERRORS as exc:
            with self._lock:
                self._unsent[id(message)] = (message, copy, delay)
            with _REPORTING:
                self.logger.warning(
                    "Could not enqueue the deferred copy of message %s on key %r (%s); "
                    "holding its ack until it is enqueued.",
                    message.message_id,
                    key,
                    exc,
                )
        except Exception as exc:
            message.fail()
            with _REPORTING:
                self.metrics.count("deferrals_failed", message)
                self.logger.error(
                    "Dead-lettering message %s on key %r: its deferred copy can never be "
                    "enqueued: %s: %s",
                    message.message_id,
                    key,
                    type(exc).__name__,
                    exc,
                )
            return
        if debounce:
            with _REPORTING:
                self.metrics.count("debounced", message)
                self.logger.debug(
                    "Debouncing message %s on key %r: its copy runs in %d ms.",
                    message.message_id,
                    key,
                    delay,
                )
            return
        with _REPORTING:
            self.metrics.count("deferred", message)
            self.logger.debug(
                "Deferring message %s on key %r by %d ms: %d of %d running, deferral %d.",
                message.message_id,
                key,
                delay,
                holders,
                options.limit,
                deferrals,
            )
            self._warn_if_old(message, key, now_ms - int(first or now_ms), int(deferrals or 0))

    def _warn_if_old(self, message: MessageProxy, key: str, age_ms: int, deferrals: int) -> None:
        if age_ms <= self.warn_deferred_after_ms:
            return
        now = time.monotonic()
        last = self._warned_at.get(message.message_id)
        if last is not None and now - last < self.warn_deferred_after_ms / 1000:
            return
        if len(self._warned_at) >= 10_000:
            self._warned_at.clear()
        self._warned_at[message.message_id] = now
        self.logger.warning(
            "Message %s on key %r has been deferred for %d s (%d deferrals).",
            message.message_id,
            key,
            age_ms // 1000,
            deferrals,
        )

    def before_ack(self, broker: Broker, message: MessageProxy) -> None:
        with self._lock:
            unsent = self._unsent.get(id(message))
        if unsent is None or unsent[0] is not message:
            return
        _, copy, delay = unsent
        try:
            broker.enqueue(copy, delay=delay)
        except TRANSIENT_ERRORS as exc:
            raise DeferralNotEnqueuedError(
                f"deferred copy of message {message.message_id} not enqueued yet: {exc}"
            ) from exc
        except Exception as exc:
            with self._lock:
                self._unsent.pop(id(message), None)
            raise DeferralFailedError(
                f"deferred copy of message {message.message_id} can never be enqueued ({exc}); "
                "the message stays unacked and is redelivered when this worker restarts"
            ) from exc
        with self._lock:
            self._unsent.pop(id(message), None)
        with _REPORTING:
            self.logger.info("Enqueued the deferred copy of message %s.", message.message_id)

    def before_nack(self, broker: Broker, message: MessageProxy) -> None:
        with self._lock:
            self._unsent.pop(id(message), None)

    def after_process_message(
        self,
        broker: Broker,
        message: MessageProxy,
        *,
        result: Any = None,
        exception: BaseException | None = None,
    ) -> None:
        self._release(message)

    def after_skip_message(self, broker: Broker, message: MessageProxy) -> None:
        self._release(message)

    def _release(self, message: MessageProxy) -> None:
        """Give back the slot taken for this very delivery, and nothing else.

        Dramatiq calls every middleware's after-hooks, also for a message
        another middleware skipped before the gate saw it: such a message has
        no entry here, so nobody else's slot is released.
        """
        with self._lock:
            holding = self._held.get(id(message))
            if holding is None or holding.message is not message:
                return
            del self._held[id(message)]
        self.heartbeat.forget(holding)
        with _REPORTING:
            self.metrics.holders(message, -1)
        try:
            removed = self.leases.release(holding.redis_key, holding.token)
        except Exception as exc:
            with _REPORTING:
                self.logger.warning(
                    "Could not release the slot on key %r (%s); its lease frees it in %d ms.",
                    holding.key,
                    exc,
                    holding.lease_ms,
                )
            return
        with _REPORTING:
            self.metrics.count("released", message)
        if not removed and not holding.lost:
            self._lease_lost(holding)

    def _lease_lost(self, holding: _Holding) -> None:
        with _REPORTING:
            self.metrics.count("leases_lost", holding.message)
            self.logger.warning(
                "Lease of message %s on key %r expired while it ran: renewals did not reach Redis.",
                holding.message.message_id,
                holding.key,
            )


class _Ungateable(Exception):
    """A message whose key or options are unusable; it is dead-lettered."""


@dataclass(frozen=True)
class _Options:
    """The tunables that apply to one message."""

    limit: int
    delay_ms: int
    jitter_ms: int
    lease_ms: int
    skip_if_pending: bool
    debounce_ms: int = 0

    @classmethod
    def of(
        cls,
        where: str,
        options: Mapping[str, Any],
        defaults: _Options,
        error: type[Exception] = GateConfigurationError,
    ) -> _Options:
        """``defaults`` overridden by ``options``; ``error`` naming ``where`` if unusable."""
        changes: dict[str, Any] = {}
        for name, (attribute, minimum) in _INTS.items():
            value = options.get(name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
                raise error(f"{where}: {name} must be an int >= {minimum}, got {value!r}")
            changes[attribute] = value
        skip = options.get(_SKIP)
        if skip is not None:
            if not isinstance(skip, bool):
                raise error(f"{where}: {_SKIP} must be a bool, got {skip!r}")
            changes["skip_if_pending"] = skip
        result = replace(defaults, **changes)
        if result.debounce_ms and not result.skip_if_pending:
            raise error(
                f"{where}: concurrency_debounce_ms needs concurrency_skip_if_pending=True "
                "(a window's messages are done by one run: they must be fungible)"
            )
        if result.debounce_ms > MAX_DELAY_MS:
            raise error(f"{where}: concurrency_debounce_ms must be at most {MAX_DELAY_MS}")
        if result.delay_ms + result.jitter_ms > MAX_DELAY_MS:
            raise error(
                f"{where}: concurrency_delay_ms + concurrency_jitter_ms must be at most "
                f"{MAX_DELAY_MS} (7 days, the longest delay a broker accepts)"
            )
        return result


def _marker_prefix(actor_name: str, queue_name: str) -> str:
    """The prefix of a pending marker's member: ``p:<len>:<actor>:<queue>/``.

    The length makes the actor's name unambiguous and Dramatiq's queue names
    hold no ``/``, so no prefix is a prefix of another's; empty for a caller
    that names neither (every marker on the key counts).
    """
    if not actor_name and not queue_name:
        return ""
    return f"p:{len(actor_name)}:{actor_name}:{queue_name}/"


class _Leases:
    """The three Lua scripts of the gate on one Redis client."""

    def __init__(self, client: redis.Redis) -> None:
        self._acquire = client.register_script((_LUA / "gate_acquire.lua").read_text())
        self._release = client.register_script((_LUA / "gate_release.lua").read_text())
        self._renew = client.register_script((_LUA / "gate_renew.lua").read_text())

    def acquire(
        self,
        key: str,
        token: str,
        *,
        limit: int,
        lease_ms: int,
        message_id: str,
        skip_if_pending: bool = False,
        pending_ttl_ms: int = DEFAULT_PENDING_TTL_MS,
        debounce_ms: int = 0,
        actor_name: str = "",
        queue_name: str = "",
    ) -> tuple[int, int, int, str]:
        """``(decision, holders, reclaimed, pending message id)`` of one attempt.

        ``actor_name`` and ``queue_name``: only a pending copy of this actor on
        this queue covers the message (a copy waiting on another queue never
        holds it back); both empty, any pending copy on the key does.
        """
        args: list[str | int] = [
            token,
            limit,
            lease_ms,
            message_id,
            int(skip_if_pending),
            pending_ttl_ms,
            debounce_ms,
            _marker_prefix(actor_name, queue_name),
        ]
        decision, holders, reclaimed, *pending = self._acquire(keys=[key], args=args)
        pending_id = pending[0].decode() if pending and isinstance(pending[0], bytes) else ""
        return int(decision), int(holders), int(reclaimed), pending_id

    def release(self, key: str, token: str) -> bool:
        """Give the slot back; False if its lease had already expired and been purged."""
        return bool(self._release(keys=[key], args=[token]))

    def renew(self, key: str, leases: Sequence[tuple[str, int]]) -> list[str]:
        """Extend each ``(token, lease_ms)`` from now; return the tokens no longer held."""
        args: list[str | int] = [part for lease in leases for part in lease]
        lost = self._renew(keys=[key], args=args)
        return [t.decode() if isinstance(t, bytes) else str(t) for t in lost]


@dataclass(eq=False)
class _Holding:
    """One slot this process holds: for which delivery, on which key, with which lease."""

    message: MessageProxy
    key: str
    redis_key: str
    token: str
    lease_ms: int
    renewed_at: float = field(default=0.0)
    lost: bool = False


class _Heartbeat:
    """Renews this process's holdings, a third of a lease after the last renewal.

    One daemon thread, started by the first holding (also after a fork), sleeps
    until the next renewal is due or a new holding arrives. A holding survives
    two missed renewals before its lease runs out.
    """

    def __init__(
        self,
        leases: _Leases,
        *,
        on_lost: Callable[[_Holding], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.logger = get_logger(__name__, type(self))
        self.leases = leases
        self.on_lost = on_lost
        self.clock = clock
        self._holdings: set[_Holding] = set()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopped = False
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()
        self._next_due = 0.0

    def add(self, holding: _Holding) -> None:
        holding.renewed_at = self.clock()
        due = holding.renewed_at + holding.lease_ms / 3000
        with self._lock:
            self._holdings.add(holding)
            alive = self._thread is not None and self._thread.is_alive()
            started = not alive or self._pid != os.getpid()
            if started:
                self._pid, self._stopped = os.getpid(), False
                self._thread = threading.Thread(
                    target=self._run, name="gate-heartbeat", daemon=True
                )
                self._thread.start()
            wake = started or due < self._next_due
        if wake:  # only if the thread would sleep past this holding's renewal
            self._wake.set()

    def forget(self, holding: _Holding) -> None:
        with self._lock:
            self._holdings.discard(holding)

    def stop(self) -> None:
        self._stopped = True
        self._wake.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def _run(self) -> None:
        while not self._stopped:
            self._wake.clear()
            with self._lock:
                self._next_due = float("inf")
            try:
                pause = self.renew_due()
            except Exception:  # never die: the holders would lose their leases
                self.logger.warning("Renewing gate leases failed; retrying.", exc_info=True)
                pause = 0.5
            pause = max(pause, 0.02)
            with self._lock:
                self._next_due = self.clock() + pause
            self._wake.wait(pause)

    def renew_due(self) -> float:
        """Renew every holding due for renewal; return the seconds until the next is due."""
        now = self.clock()
        with self._lock:
            holdings = [h for h in self._holdings if not h.lost]
        failed = False
        due_by_key: dict[str, list[_Holding]] = defaultdict(list)
        for holding in holdings:  # what is due within one tick too, rather than wake again
            if now - holding.renewed_at >= holding.lease_ms / 3000 - 0.02:
                due_by_key[holding.redis_key].append(holding)
        for redis_key, due in due_by_key.items():
            try:
                lost = set(self.leases.renew(redis_key, [(h.token, h.lease_ms) for h in due]))
            except Exception as exc:
                self.logger.warning(
                    "Could not renew %d lease(s) on key %r: %s", len(due), redis_key, exc
                )
                failed = True
                continue
            for holding in due:
                if holding.token not in lost:
                    holding.renewed_at = now
                    continue
                with self._lock:  # released meanwhile: not lost, just gone
                    registered = holding in self._holdings
                if registered:
                    holding.lost = True
                    self.on_lost(holding)
        with self._lock:
            live = [h for h in self._holdings if not h.lost]
        if not live:
            return 3600.0
        pause = min(h.renewed_at + h.lease_ms / 3000 for h in live) - self.clock()
        return max(pause, 0.25) if failed else pause


class _Metrics:
    """The gate's Prometheus metrics, labelled by queue and actor; nothing if disabled.

    ``prometheus_client`` is imported on first use, not at import time:
    Dramatiq's ``Prometheus`` middleware sets ``PROMETHEUS_MULTIPROC_DIR`` at
    process boot, and prometheus-client decides at import whether values are
    shared between processes; made lazily, the gate's metrics are exported by
    Dramatiq's exposition server next to its own.
    """

    _COUNTERS = {
        "acquired": "Slots acquired.",
        "deferred": "Messages deferred over the limit.",
        "debounced": "Messages that opened a debounce window (their copy runs when it closes).",
        "skipped_pending": "Over-limit messages acked without running: a pending copy does "
        "their work.",
        "released": "Slots released.",
        "leases_reclaimed": "Leases of dead holders purged after expiry.",
        "leases_lost": "Leases that expired while their holder ran.",
        "redis_errors": "Gate decisions that failed closed on Redis.",
        "deferrals_failed": "Messages dead-lettered: their deferred copy could never be enqueued.",
    }
    _LABELS = ["queue_name", "actor_name"]

    def __init__(self, *, enabled: bool, registry: Any) -> None:
        self.enabled = enabled
        self.registry = registry
        self._metrics: dict[str, Any] = {}
        self._lock = threading.Lock()

    def _get(self, name: str) -> Any:
        if not self._metrics:
            with self._lock:
                if not self._metrics:
                    self._metrics = self._make()
        return self._metrics[name]

    def _make(self) -> dict[str, Any]:
        import prometheus_client as prom

        if self.registry is None:
            self.registry = prom.CollectorRegistry()
        made: dict[str, Any] = {
            name: prom.Counter(f"dramatiq_gate_{name}", doc, self._LABELS, registry=self.registry)
            for name, doc in self._COUNTERS.items()
        }
        made["holders"] = prom.Gauge(
            "dramatiq_gate_holders",
            "Slots held now by this process.",
            self._LABELS,
            registry=self.registry,
            multiprocess_mode="livesum",
        )
        made["deferral_age"] = prom.Histogram(
            "dramatiq_gate_deferral_age_seconds",
            "Time from a message's first deferral to the start of its run.",
            self._LABELS,
            buckets=(0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, float("inf")),
            registry=self.registry,
        )
        made["decision"] = prom.Histogram(
            "dramatiq_gate_decision_seconds",
            "Cost of one gate decision (key, Redis script).",
            self._LABELS,
            buckets=(0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5),
            registry=self.registry,
        )
        return made

    def _labels(self, name: str, message: MessageProxy) -> Any:
        return self._get(name).labels(q_name(message.queue_name), message.actor_name)

    def count(self, name: str, message: MessageProxy, amount: int = 1) -> None:
        if self.enabled:
            self._labels(name, message).inc(amount)

    def holders(self, message: MessageProxy, delta: int) -> None:
        if self.enabled:
            self._labels("holders", message).inc(delta)

    def observe(self, name: str, message: MessageProxy, value: float) -> None:
        if self.enabled:
            self._labels(name, message).observe(value)
