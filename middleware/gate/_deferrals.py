"""Deferred copies: made, enqueued, held back while the broker cannot take them, or given up.

A deferral is neither a failure nor a ``Retry``: the copy keeps the message
id and every option, ``retries`` included, plus ``concurrency_deferrals``
and ``concurrency_first_deferred_at``. Its ``message_timestamp`` is the time
it becomes due, so ``AgeLimit`` measures each wait in the queue, not the
time the gate held the message back; with ``concurrency_keep_timestamp`` it
is the message's own, so ``AgeLimit`` counts from the send.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from typing import Any

from dramatiq import Broker, Message
from dramatiq.broker import MessageProxy
from dramatiq.common import current_millis, q_name
from dramatiq.errors import BrokerConnectionError

from middleware.gate._metrics import GateMetrics, Reporting
from middleware.gate._options import (
    DEBOUNCED,
    DEFERRALS,
    FIRST_DEFERRED_AT,
    MARKED_AT_ENQUEUE,
    DeferralFailedError,
    DeferralNotEnqueuedError,
    GateOptions,
    key_of,
)
from middleware.gate.backends import GateBackend
from middleware.gate.backends.base import marker
from middleware.gate.backends.redis import is_transient_redis_error

#: Errors of an enqueue that may succeed later, whatever the broker.
TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (
    BrokerConnectionError,
    ConnectionError,
    TimeoutError,
)


def is_transient(exc: BaseException) -> bool:
    """Whether an enqueue that raised ``exc`` may succeed if tried again.

    A broker on Redis raises redis-py's errors, which
    :func:`~middleware.gate.backends.redis.is_transient_redis_error` knows;
    any other error never passes.
    """
    return isinstance(exc, TRANSIENT_ERRORS) or is_transient_redis_error(exc)


class Deferrals:
    """The gate's deferred copies, and the acks held back until their copy is enqueued.

    ``backend_key(key)`` names a key in ``backend``; a copy that can never be
    enqueued has its pending marker taken away, so that it covers no other
    message.
    """

    def __init__(
        self,
        *,
        logger: logging.Logger | logging.LoggerAdapter[Any],
        metrics: GateMetrics,
        reporting: Reporting,
        backend: GateBackend,
        backend_key: Callable[[str], str],
        pending_ttl_ms: int,
        warn_deferred_after_ms: int,
    ) -> None:
        self.logger = logger
        self.metrics = metrics
        self.reporting = reporting
        self.backend = backend
        self.backend_key = backend_key
        self.pending_ttl_ms = pending_ttl_ms
        self.warn_deferred_after_ms = warn_deferred_after_ms
        # Copies not yet enqueued, by the identity of the delivery, with the
        # store_results option to restore if they never are.
        self._unsent: dict[int, tuple[MessageProxy, Message[Any], int, str, Any]] = {}
        self._lock = threading.Lock()
        self._warned_at: dict[str, float] = {}

    def open_window(
        self, broker: Broker, message: Message[Any], window_ms: int, *, keep_timestamp: bool
    ) -> Message[Any]:
        """Enqueue ``message`` as the copy that closes its key's window, due in
        ``window_ms``: its timestamp is then, so ``AgeLimit`` counts from there
        (or, with ``keep_timestamp``, the message's own)."""
        due = message.message_timestamp if keep_timestamp else current_millis() + window_ms
        copy = message.copy(
            message_timestamp=due, options={MARKED_AT_ENQUEUE: True, DEBOUNCED: True}
        )
        enqueued = broker.enqueue(copy, delay=window_ms)
        with self.reporting:
            self.metrics.count_for("debounced", q_name(message.queue_name), message.actor_name)
        return enqueued

    def defer(
        self,
        broker: Broker,
        message: MessageProxy,
        key: str,
        options: GateOptions,
        holders: int,
        *,
        debounce: bool = False,
    ) -> None:
        """Enqueue a delayed copy; hold back the ack, or dead-letter, if that fails.

        Raises :class:`DeferralFailedError` (a ``SkipMessage``) with the
        original failed when the copy can never be enqueued: the worker then
        dead-letters it with that error as its reason.

        ``debounce``: the copy that closes the key's window, due in
        ``debounce_ms``; not a deferral (its budget of deferrals is untouched).
        The original is skipped, not completed: Dramatiq's ``Results`` stores
        no result for it (the copy, with the same message id, stores the
        real one when it runs).
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
        # Due then, AgeLimit counts from there; or from the send, if the actor says.
        timestamp = message.message_timestamp if options.keep_timestamp else now_ms + delay
        copy = message.copy(message_timestamp=timestamp, options=extra)
        stored = message.options.get("store_results")
        message.options["store_results"] = False  # a deferral is not a completion
        try:
            broker.enqueue(copy, delay=delay)
        except Exception as exc:
            if is_transient(exc):
                with self._lock:
                    self._unsent[id(message)] = (message, copy, delay, key, stored)
                with self.reporting:
                    self.logger.warning(
                        "Could not enqueue the deferred copy of message %s on key %r (%s); "
                        "holding its ack until it is enqueued.",
                        message.message_id,
                        key,
                        exc,
                    )
                return
            self._restore_results(message, stored)
            raise self._give_up(message, key, exc) from exc
        if debounce:
            with self.reporting:
                self.metrics.count("debounced", message)
                self.logger.debug(
                    "Debouncing message %s on key %r: its copy runs in %d ms.",
                    message.message_id,
                    key,
                    delay,
                )
            return
        with self.reporting:
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

    @staticmethod
    def _restore_results(message: MessageProxy, stored: Any) -> None:
        if stored is None:
            message.options.pop("store_results", None)
        else:
            message.options["store_results"] = stored

    def _give_up(self, message: MessageProxy, key: str, exc: BaseException) -> DeferralFailedError:
        """The copy can never be enqueued: take its marker away and fail the original,
        with the reason it is dead-lettered with (returned, to be raised)."""
        self.forget_marker(key, message.message_id, message.actor_name, q_name(message.queue_name))
        failure = DeferralFailedError(
            f"its deferred copy can never be enqueued: {type(exc).__name__}: {exc}"
        )
        message.fail()
        message.stuff_exception(failure)
        with self.reporting:
            self.metrics.count("deferrals_failed", message)
            self.logger.error(
                "Dead-lettering message %s on key %r: its deferred copy can never be "
                "enqueued: %s: %s",
                message.message_id,
                key,
                type(exc).__name__,
                exc,
            )
        return failure

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

    def enqueue_held(self, broker: Broker, message: MessageProxy) -> None:
        """Enqueue a held-back copy before its original is acked; never ack it under a marker.

        A transient error keeps the ack held (Dramatiq's worker retries);
        any other gives the copy up: its marker goes and the original is
        failed, so the worker's retry dead-letters it with the reason.
        """
        with self._lock:
            unsent = self._unsent.get(id(message))
        if unsent is None or unsent[0] is not message:
            return
        _, copy, delay, key, stored = unsent
        try:
            broker.enqueue(copy, delay=delay)
        except Exception as exc:
            if is_transient(exc):
                raise DeferralNotEnqueuedError(
                    f"deferred copy of message {message.message_id} not enqueued yet: {exc}"
                ) from exc
            with self._lock:
                self._unsent.pop(id(message), None)
            self._restore_results(message, stored)
            raise self._give_up(message, key, exc) from exc
        with self._lock:
            self._unsent.pop(id(message), None)
        with self.reporting:
            self.logger.info("Enqueued the deferred copy of message %s.", message.message_id)

    def drop_held(self, message: MessageProxy) -> None:
        with self._lock:
            self._unsent.pop(id(message), None)

    def forget_marker(self, key: str, message_id: str, actor_name: str, queue: str) -> None:
        """Take away the marker of a message that will never run, so it covers no other."""
        try:
            self.backend.release(self.backend_key(key), marker(message_id, actor_name, queue))
        except Exception as exc:
            with self.reporting:
                self.logger.warning(
                    "Could not remove the pending marker of message %s on key %r (%s); it "
                    "covers others for at most %d ms.",
                    message_id,
                    key,
                    exc,
                    self.pending_ttl_ms,
                )

    def unmark_unseen(self, broker: Broker, message: MessageProxy) -> None:
        try:
            actor = broker.get_actor(message.actor_name)
            key = key_of(actor.options, message.options, message.args, message.kwargs)
        except Exception:
            return
        if key is not None:
            self.forget_marker(
                key, message.message_id, message.actor_name, q_name(message.queue_name)
            )
