"""The gate's options, their defaults and validation, and its exceptions.

Each ``concurrency_*`` option is a constructor argument, an actor option and
a message option of the same name; the message's wins, then the actor's,
then the constructor's. :meth:`GateOptions.of` checks them, so an unusable
value is refused when the actor is declared, not when a message arrives.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from dramatiq.errors import BrokerConnectionError
from dramatiq.middleware import MiddlewareError, SkipMessage
from dramatiq.results import Results

#: Prefix of every gate key; the backend's key is ``<key_prefix>:{<key>}`` (a Cluster hash tag).
DEFAULT_KEY_PREFIX = "dramatiq:gate"

#: Holders per key when the actor does not say.
DEFAULT_LIMIT = 1

#: Base delay of a deferred copy, in milliseconds.
DEFAULT_DELAY_MS = 500

#: Random extra delay of a deferred copy, up to this many milliseconds.
DEFAULT_JITTER_MS = 500

#: Lease of a holder, in ms; renewed every third of it while the actor runs.
DEFAULT_LEASE_MS = 30_000

#: Debounce window of a key, in ms; 0 is off.
DEFAULT_DEBOUNCE_MS = 0

#: A window's marker outlives the window by this much at least, in ms (the
#: copy is due when the window closes, and takes a moment to start).
WINDOW_MARKER_MARGIN_MS = 1000


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

#: Message option the gate writes on a message it enqueued under its own pending marker.
MARKED_AT_ENQUEUE = "concurrency_marked_at_enqueue"

KEY = "concurrency_key"
SKIP_IF_PENDING = "concurrency_skip_if_pending"
#: A deferred copy keeps its message's ``message_timestamp`` (``AgeLimit`` counts from the send).
KEEP_TIMESTAMP = "concurrency_keep_timestamp"
#: Boolean options -> field of GateOptions.
BOOLEAN_OPTIONS = {SKIP_IF_PENDING: "skip_if_pending", KEEP_TIMESTAMP: "keep_timestamp"}
#: Integer options -> (field of GateOptions, minimum).
INTEGER_OPTIONS = {
    "concurrency_limit": ("limit", 1),
    "concurrency_delay_ms": ("delay_ms", 0),
    "concurrency_jitter_ms": ("jitter_ms", 0),
    "concurrency_lease_ms": ("lease_ms", 1),
    "concurrency_debounce_ms": ("debounce_ms", 0),
}
#: Every actor option the gate reads.
ACTOR_OPTIONS = frozenset({KEY, *BOOLEAN_OPTIONS, *INTEGER_OPTIONS})


#: Message and actor options by which someone observes a message's completion.
OBSERVED_OPTIONS = ("on_success", "on_failure", "pipe_target", "group_completion_uuid")


class GateConfigurationError(MiddlewareError, ValueError):
    """Gate options that can never work, refused by the constructor or at declaration."""


class DeferralNotEnqueuedError(MiddlewareError, BrokerConnectionError):
    """The deferred copy is not enqueued yet: keep the original unacked and try again."""


class DeferralFailedError(SkipMessage, BrokerConnectionError):
    """The deferred copy can never be enqueued: the original is failed, to be dead-lettered.

    The message is dead-lettered with this error as its reason, which
    Dramatiq's ``Results`` stores and ``StubBroker.join`` raises. Raised
    before the actor runs, it is a ``SkipMessage``, so the actor does not
    run and the worker keeps it as the reason (any other ``SkipMessage``
    would replace it). Raised when an ack was held back, it is a
    ``BrokerConnectionError``, so the worker runs its post-processing once
    more and then nacks the failed message instead of acking it.
    """


class Ungateable(Exception):
    """A message whose key or options are unusable; it is dead-lettered."""


@dataclass(frozen=True)
class GateOptions:
    """The tunables that apply to one message."""

    limit: int
    delay_ms: int
    jitter_ms: int
    lease_ms: int
    skip_if_pending: bool
    debounce_ms: int = 0
    keep_timestamp: bool = False

    @classmethod
    def of(
        cls,
        where: str,
        options: Mapping[str, Any],
        defaults: GateOptions,
        error: type[Exception] = GateConfigurationError,
    ) -> GateOptions:
        """``defaults`` overridden by ``options``; ``error`` naming ``where`` if unusable."""
        changes: dict[str, Any] = {}
        for name, (attribute, minimum) in INTEGER_OPTIONS.items():
            value = options.get(name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
                raise error(f"{where}: {name} must be an int >= {minimum}, got {value!r}")
            changes[attribute] = value
        for name, attribute in BOOLEAN_OPTIONS.items():
            flag = options.get(name)
            if flag is None:
                continue
            if not isinstance(flag, bool):
                raise error(f"{where}: {name} must be a bool, got {flag!r}")
            changes[attribute] = flag
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


def key_of(
    actor_options: Mapping[str, Any], message_options: Mapping[str, Any], args: Any, kwargs: Any
) -> str | None:
    """The message's gate key: its own ``concurrency_key`` option, else the actor's function's.

    Raises :class:`Ungateable` if the function fails or gives anything but a
    non-empty ``str`` or None.
    """
    if KEY in message_options:  # a message carries a literal key, never a function
        key = message_options[KEY]
    else:
        function = actor_options.get(KEY)
        if function is None:
            return None
        try:
            key = function(*args, **kwargs)
        except Exception as exc:
            raise Ungateable(f"{KEY} raised {type(exc).__name__}: {exc}") from exc
    if key is not None and (not isinstance(key, str) or not key):
        raise Ungateable(f"{KEY} must give a non-empty str or None, got {key!r}")
    return key


def is_observed(broker: Any, actor: Any, message: Any) -> bool:
    """Whether someone waits on this very message's completion, so it must run itself.

    A message with a stored result, success or failure callbacks, a
    pipeline's next step or a group's completion barrier is never acked
    as covered by another message's run (nor dropped at enqueue): those
    would then never fire, or fire for work not yet done.
    """
    for name in OBSERVED_OPTIONS:
        if message.options.get(name) or actor.options.get(name):
            return True
    stored = message.options.get("store_results", actor.options.get("store_results"))
    if stored is not None:
        return bool(stored)
    return any(  # Dramatiq's Results middleware may store every result by default
        isinstance(middleware, Results) and middleware.store_results
        for middleware in broker.middleware
    )


def marker_ttl_ms(pending_ttl_ms: int, window_ms: int) -> int:
    """How long a marker set at enqueue stands: a window's until its copy is due, and longer."""
    return max(pending_ttl_ms, window_ms + WINDOW_MARKER_MARGIN_MS) if window_ms else pending_ttl_ms
