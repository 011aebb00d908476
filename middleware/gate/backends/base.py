"""What a gate backend does: the base both backends implement, and its vocabulary.

A backend keeps, per gate key, the *holders* (one lease per running message,
scored by its expiry in the backend's own clock) and the *pending markers*
(at most one per actor and queue: the message whose run will do the work of
every message of that actor, key and queue received before it starts). Every
method is one atomic step; :class:`~middleware.gate.backends.RedisBackend`
makes each one Lua script on one key.
"""

from __future__ import annotations

import uuid
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import NamedTuple

#: Decisions of :meth:`GateBackend.acquire`.
ACQUIRED, DEFER, SKIPPED, DEBOUNCE = 1, 2, 3, 4


class Decision(NamedTuple):
    """One acquire: what to do, live holders after it, expired leases purged, and
    (with ``SKIPPED``) the message whose pending copy covers this one."""

    decision: int
    holders: int
    reclaimed: int
    pending: str


#: What every pending marker's member starts with; a holder's token never does.
PENDING = "p:"

#: What every holder's token starts with (:func:`holder_token`); a marker's never does.
HOLDER = "h:"


def holder_token(message_id: str) -> str:
    """A fresh token for one delivery of ``message_id``: unique even for a redelivery."""
    return f"{HOLDER}{message_id}:{uuid.uuid4().hex[:12]}"


def marker_prefix(actor_name: str, queue_name: str) -> str:
    """The prefix of a pending marker's member: ``p:<len>:<actor>:<queue>/``.

    The length makes the actor's name unambiguous and Dramatiq's queue names
    hold no ``/``, so no prefix is a prefix of another's; empty for a caller
    that names neither (every marker on the key counts).
    """
    if not actor_name and not queue_name:
        return ""
    return f"{PENDING}{len(actor_name)}:{actor_name}:{queue_name}/"


def marker(message_id: str, actor_name: str, queue_name: str) -> str:
    """The member that marks ``message_id`` pending for its actor and queue."""
    return (marker_prefix(actor_name, queue_name) or PENDING) + message_id


class Ask(NamedTuple):
    """What one :meth:`GateBackend.acquire` asks, as a backend decides it."""

    limit: int
    lease_ms: int
    message_id: str
    skip_if_pending: bool
    pending_ttl_ms: int
    debounce_ms: int
    #: :func:`marker_prefix` of the message's actor and queue.
    marker_prefix: str


class GateBackend(ABC):
    """Where the gate keeps its leases and markers; shared by every worker process."""

    def acquire(
        self,
        key: str,
        token: str,
        *,
        limit: int,
        lease_ms: int,
        message_id: str,
        skip_if_pending: bool = False,
        pending_ttl_ms: int = 60_000,
        debounce_ms: int = 0,
        actor_name: str = "",
        queue_name: str = "",
    ) -> Decision:
        """Take a slot of ``key`` for ``token``, or say why not.

        Purges expired leases and markers first. Under the limit: a slot,
        and this message's own marker (if any) goes, since it starts now.
        Over it, with ``skip_if_pending``: ``SKIPPED`` under another message's
        marker of this actor and queue, else ``DEFER`` and this message's
        marker set. ``debounce_ms``: ``SKIPPED`` under another's marker, else
        ``DEBOUNCE`` with this message's marker set for the window.
        """
        scope = marker_prefix(actor_name, queue_name)
        ask = Ask(limit, lease_ms, message_id, skip_if_pending, pending_ttl_ms, debounce_ms, scope)
        return self._decide(key, token, ask)

    @abstractmethod
    def _decide(self, key: str, token: str, ask: Ask) -> Decision:
        """:meth:`acquire`, its parameters in one :class:`Ask`: one atomic step."""

    @abstractmethod
    def release(self, key: str, member: str) -> bool:
        """Remove a holder's slot or a marker; False if it was not there (expired)."""

    @abstractmethod
    def renew(self, key: str, leases: Sequence[tuple[str, int]]) -> list[str]:
        """Extend each ``(token, lease_ms)`` from now; return the tokens no longer held."""

    @abstractmethod
    def mark_unless_pending(
        self, key: str, *, message_id: str, pending_ttl_ms: int, actor_name: str, queue_name: str
    ) -> str:
        """Mark ``message_id`` pending unless another message of its actor and queue is.

        Returns "" when this message's marker is set (send it), or the id of
        the pending message that covers it (drop it).
        """

    @abstractmethod
    def _live(self, key: str) -> list[str]:
        """The live members of ``key``, holders and markers, soonest expiry first."""

    def holders(self, key: str) -> list[str]:
        """The tokens of the live holders of ``key`` (for inspection and tests)."""
        return [m for m in self._live(key) if m.startswith(HOLDER)]

    def markers(self, key: str) -> list[str]:
        """The live pending markers of ``key`` (for inspection and tests)."""
        return [m for m in self._live(key) if m.startswith(PENDING)]
