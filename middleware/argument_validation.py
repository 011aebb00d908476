"""Dead-letter messages whose arguments can never fit their actor.

Without this, a message with a missing argument or a string where an int
belongs raises ``TypeError`` inside the actor, and the Retries middleware
retries it twenty times with backoff before it reaches the dead-letter
queue: a retry storm for a message that cannot succeed. This middleware
binds the arguments to the actor function's signature before it runs and
checks the simple annotated types (``int``, ``str``, ``float``, ``bool``).
A message that does not fit is failed (so the consumer nacks it into the
dead-letter queue at once) with one readable log line naming the reason.
"""

from __future__ import annotations

import inspect
import typing
from typing import Any

import dramatiq
from dramatiq.broker import MessageProxy
from dramatiq.logging import get_logger
from dramatiq.middleware import Middleware, SkipMessage

#: Annotated types that are checked; anything else is only bound, not checked.
CHECKED_TYPES: tuple[type, ...] = (int, str, float, bool)


class ArgumentValidation(Middleware):
    """Fail, without retries, any message whose args do not bind to its actor."""

    def __init__(self) -> None:
        self.logger = get_logger(__name__, type(self))
        self._signatures: dict[str, tuple[inspect.Signature, dict[str, Any]]] = {}

    def _signature(
        self, actor: dramatiq.Actor[Any, Any]
    ) -> tuple[inspect.Signature, dict[str, Any]]:
        cached = self._signatures.get(actor.actor_name)
        if cached is None:
            fn = actor.fn
            try:
                hints = typing.get_type_hints(fn)
            except Exception:  # unresolvable annotations: bind only
                hints = {}
            cached = self._signatures[actor.actor_name] = (inspect.signature(fn), hints)
        return cached

    def problem(self, actor: dramatiq.Actor[Any, Any], args: Any, kwargs: Any) -> str | None:
        """Why ``args``/``kwargs`` cannot be passed to ``actor``, or None if they can."""
        if not isinstance(args, list | tuple) or not isinstance(kwargs, dict):
            return "args must be a list and kwargs an object"
        signature, hints = self._signature(actor)
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as exc:
            return str(exc)
        for name, value in bound.arguments.items():
            expected = hints.get(name)
            if expected not in CHECKED_TYPES:
                continue
            # bool is an int in Python; an int argument must not accept True.
            if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
                if expected is float and isinstance(value, int) and not isinstance(value, bool):
                    continue
                return f"argument {name!r} must be {expected.__name__}, got {type(value).__name__}"
        return None

    def before_process_message(self, broker: dramatiq.Broker, message: MessageProxy) -> None:
        try:
            actor = broker.get_actor(message.actor_name)
        except dramatiq.errors.ActorNotFound:
            return  # the worker reports unknown actors itself
        reason = self.problem(actor, message.args, message.kwargs)
        if reason is None:
            return
        self.logger.error(
            "Dead-lettering message %s of actor %s: invalid arguments: %s",
            message.message_id,
            message.actor_name,
            reason,
        )
        message.fail()
        raise SkipMessage(reason)
