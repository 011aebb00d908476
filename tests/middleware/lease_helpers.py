"""Calling the gate's Lua scripts directly, as the lease tests do."""

from __future__ import annotations

from typing import Any, NamedTuple

from middleware.gate_backends import ACQUIRED, DEFER, SKIPPED, GateBackend

__all__ = ["ACQUIRED", "DEFER", "SKIPPED", "Outcome", "take"]


class Outcome(NamedTuple):
    decision: int
    holders: int
    reclaimed: int
    pending: str


def take(
    leases: GateBackend, key: str, token: str, *, limit: int = 2, lease_ms: int = 1000, **kw: Any
) -> Outcome:
    """One acquire of ``token`` on ``key``; the message id defaults to the token."""
    message_id = kw.pop("message_id", token)
    return Outcome(
        *leases.acquire(key, token, limit=limit, lease_ms=lease_ms, message_id=message_id, **kw)
    )
