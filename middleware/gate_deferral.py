"""Deferred copies of over-limit messages, and what happens if one cannot be sent.

A deferred copy keeps the message id and every option (``retries``
included) and carries two of its own: ``concurrency_deferrals`` and
``concurrency_first_deferred_at``. It is enqueued with the gate's delay plus
a random jitter, so deferred copies of one key do not all come back at once.

If the copy cannot be enqueued, the original is still skipped, but its ack
is held back: ``before_ack`` tries the enqueue again and, while it fails,
raises :class:`DeferralNotEnqueuedError`. That exception is a
``MiddlewareError`` (Dramatiq does not swallow it) and a
``BrokerConnectionError``, so the worker treats it like an unreachable
broker: it keeps the message unacked and retries the ack (and so the
enqueue) every few seconds. If the worker dies meanwhile, the original is
still unacked and the broker redelivers it. Neither ``fail()`` (dead letter)
nor an exception in the actor path (Retries would count it) is used.

Dramatiq's worker logs every ``SkipMessage`` as a warning; a deferral is
routine, so :class:`QuietDeferrals` drops exactly those lines for the
messages this gate deferred or coalesced, which it logs at debug instead.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from typing import Any

import dramatiq
from dramatiq.errors import BrokerConnectionError
from dramatiq.middleware import MiddlewareError

from middleware.gate_metrics import GateMetrics
from middleware.gate_options import DEFERRALS, FIRST_DEFERRED_AT, GateSettings

#: The logger and line of Dramatiq's worker that reports a skipped message.
WORKER_LOGGER = "dramatiq.worker.WorkerThread"
SKIPPED_LINE = "Message %s was skipped."

#: Messages remembered for the "deferred for long" warning, at most.
MAX_AGE_WARNINGS = 10_000


class DeferralNotEnqueuedError(MiddlewareError, BrokerConnectionError):
    """The deferred copy is not enqueued yet: keep the original unacked and try again."""


class QuietDeferrals(logging.Filter):
    """Drops the worker's "was skipped" warning for a message the gate deferred."""

    def __init__(self) -> None:
        super().__init__()
        self._local = threading.local()

    def expect_skip(self, message: Any) -> None:
        self._local.message = message

    def filter(self, record: logging.LogRecord) -> bool:
        expected = getattr(self._local, "message", None)
        if expected is None or record.msg != SKIPPED_LINE or not record.args:
            return True
        args = record.args if isinstance(record.args, tuple) else (record.args,)
        if args[0] is not expected:
            return True
        self._local.message = None
        return False


class Deferrals:
    """Enqueues deferred copies and holds the ack of an original whose copy is not sent."""

    def __init__(
        self, logger: logging.Logger, metrics: GateMetrics, *, warn_deferred_after_ms: int
    ) -> None:
        self.logger = logger
        self.metrics = metrics
        self.warn_deferred_after_ms = warn_deferred_after_ms
        self.quiet = QuietDeferrals()
        self._unsent: dict[int, tuple[Any, Any, int]] = {}
        self._age_warned: dict[str, float] = {}

    def defer(
        self,
        broker: dramatiq.Broker,
        message: Any,
        key: str,
        settings: GateSettings,
        holders: int,
    ) -> None:
        """Enqueue a delayed copy of ``message``; if that fails, hold back its ack."""
        now_ms = int(time.time() * 1000)
        deferrals = int(message.options.get(DEFERRALS, 0)) + 1
        first = message.options.get(FIRST_DEFERRED_AT)
        first = first if isinstance(first, int | float) else now_ms
        copy = message.copy(options={DEFERRALS: deferrals, FIRST_DEFERRED_AT: first})
        delay = settings.delay_ms + random.randint(0, settings.jitter_ms)
        self.metrics.deferred.labels(message.actor_name).inc()
        self.logger.debug(
            "Deferring message %s on key %r by %d ms: %d of %d running, deferral %d.",
            message.message_id,
            key,
            delay,
            holders,
            settings.limit,
            deferrals,
        )
        self._warn_if_old(message, key, now_ms - int(first), deferrals)
        self.quiet.expect_skip(message)
        try:
            broker.enqueue(copy, delay=delay)
        except Exception as exc:
            self.logger.warning(
                "Could not enqueue the deferred copy of message %s on key %r (%s); "
                "holding its ack until it is enqueued.",
                message.message_id,
                key,
                exc,
            )
            self._unsent[id(message)] = (message, copy, delay)

    def before_ack(self, broker: dramatiq.Broker, message: Any) -> None:
        """Enqueue a copy that could not be sent before; until then, refuse the ack."""
        unsent = self._unsent.get(id(message))
        if unsent is None or unsent[0] is not message:
            return
        _, copy, delay = unsent
        try:
            broker.enqueue(copy, delay=delay)
        except Exception as exc:
            raise DeferralNotEnqueuedError(
                f"deferred copy of message {message.message_id} not enqueued yet: {exc}"
            ) from exc
        del self._unsent[id(message)]
        self.logger.info("Enqueued the deferred copy of message %s at last.", message.message_id)

    def forget(self, message: Any) -> None:
        """Drop a held-back copy of a message that is being rejected instead of acked."""
        self._unsent.pop(id(message), None)

    def _warn_if_old(self, message: Any, key: str, age_ms: int, deferrals: int) -> None:
        """Warn once per ``warn_deferred_after_ms`` about a message deferred that long."""
        if age_ms <= self.warn_deferred_after_ms:
            return
        now = time.monotonic()
        last = self._age_warned.get(message.message_id)
        if last is not None and now - last < self.warn_deferred_after_ms / 1000:
            return
        if len(self._age_warned) >= MAX_AGE_WARNINGS:
            self._age_warned.clear()
        self._age_warned[message.message_id] = now
        self.logger.warning(
            "Message %s on key %r has been deferred for %d s (%d deferrals).",
            message.message_id,
            key,
            age_ms // 1000,
            deferrals,
        )
