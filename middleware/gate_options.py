"""The gate's actor and message options, their lookup order and their checks.

Actor options (declared with ``@dramatiq.actor(...)``, checked at declaration):

- ``concurrency_key``: callable ``(args, kwargs) -> str | None``, or None (no gate).
- ``concurrency_limit``: holders per key, an int >= 1.
- ``concurrency_coalesce``: bool, see :mod:`middleware.per_key_concurrency`.
- ``concurrency_delay_ms`` / ``concurrency_jitter_ms``: deferral delay, plus up
  to this much random delay, in ms (ints >= 0).
- ``concurrency_lease_ms``: holder lease in ms (int >= 1), renewed while running.

Each tunable is looked up in the message's options first, then the actor's
options, then the gate's constructor default. A message option
``concurrency_key`` may be a literal key (a ``str``) or None (no gate), since
a message cannot carry a callable.

Message options the gate writes on a deferred copy: ``concurrency_deferrals``
(how many times it was deferred) and ``concurrency_first_deferred_at`` (ms
since the epoch of its first deferral).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from dramatiq.middleware import MiddlewareError

#: Message option: how many times this message has been deferred by the gate.
DEFERRALS = "concurrency_deferrals"

#: Message option: when the gate first deferred this message (ms since the epoch).
FIRST_DEFERRED_AT = "concurrency_first_deferred_at"

KEY = "concurrency_key"

#: Option name -> (settings field, minimum) of the integer tunables.
INT_OPTIONS = {
    "concurrency_limit": ("limit", 1),
    "concurrency_delay_ms": ("delay_ms", 0),
    "concurrency_jitter_ms": ("jitter_ms", 0),
    "concurrency_lease_ms": ("lease_ms", 1),
}
COALESCE = "concurrency_coalesce"


class UngateableMessageError(Exception):
    """A message whose key or gate options are unusable; it is dead-lettered."""


class GateConfigurationError(MiddlewareError, ValueError):
    """An actor declared with unusable gate options.

    A ``MiddlewareError``, so Dramatiq raises it from the declaration instead
    of logging and ignoring it.
    """


def _int_option(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")
    return value


@dataclass(frozen=True)
class GateSettings:
    """The tunables that apply to one message."""

    limit: int
    delay_ms: int
    jitter_ms: int
    lease_ms: int
    coalesce: bool

    ACTOR_OPTIONS: ClassVar[set[str]] = {KEY, COALESCE, *INT_OPTIONS}

    def check(self, where: str) -> None:
        for name, (field, minimum) in INT_OPTIONS.items():
            try:
                _int_option(name, getattr(self, field), minimum)
            except ValueError as exc:
                raise GateConfigurationError(f"{where}: {exc}") from None

    @classmethod
    def check_actor_options(cls, actor_name: str, options: Mapping[str, Any]) -> None:
        """Refuse, at declaration, gate options that could never work."""
        key = options.get(KEY)
        if key is not None and not callable(key):
            raise GateConfigurationError(
                f"actor {actor_name}: {KEY} must be a callable (args, kwargs) -> str, or None"
            )
        for name, (_, minimum) in INT_OPTIONS.items():
            if name in options:
                try:
                    _int_option(name, options[name], minimum)
                except ValueError as exc:
                    raise GateConfigurationError(f"actor {actor_name}: {exc}") from None
        if COALESCE in options and not isinstance(options[COALESCE], bool):
            raise GateConfigurationError(f"actor {actor_name}: {COALESCE} must be a bool")

    @staticmethod
    def key_of(actor_options: Mapping[str, Any], message: Any) -> str | None:
        """The message's gate key, or None if it is not gated."""
        if KEY in message.options:
            key = message.options[KEY]
        else:
            function = actor_options.get(KEY)
            if function is None:
                return None
            try:
                key = function(message.args, message.kwargs)
            except Exception as exc:
                raise UngateableMessageError(f"{KEY} raised {type(exc).__name__}: {exc}") from exc
        if key is None:
            return None
        if not isinstance(key, str) or not key:
            raise UngateableMessageError(f"{KEY} must give a non-empty str or None, got {key!r}")
        return key

    @classmethod
    def lookup(
        cls,
        actor_options: Mapping[str, Any],
        message_options: Mapping[str, Any],
        defaults: GateSettings,
    ) -> GateSettings:
        """Message option, then actor option, then the gate's default."""
        changes: dict[str, Any] = {}
        for name, (field, minimum) in INT_OPTIONS.items():
            value = message_options.get(name, actor_options.get(name))
            if value is not None:
                try:
                    changes[field] = _int_option(name, value, minimum)
                except ValueError as exc:
                    raise UngateableMessageError(str(exc)) from None
        coalesce = message_options.get(COALESCE, actor_options.get(COALESCE))
        if coalesce is not None:
            if not isinstance(coalesce, bool):
                raise UngateableMessageError(f"{COALESCE} must be a bool, got {coalesce!r}")
            changes["coalesce"] = coalesce
        return replace(defaults, **changes) if changes else defaults
