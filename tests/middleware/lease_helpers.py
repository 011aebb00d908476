"""Calling the gate's Lua scripts directly, as the lease tests do."""

from __future__ import annotations

from typing import Any, NamedTuple

from middleware.per_key_concurrency import _ACQUIRED, _DEFER, _SKIPPED, _Leases

ACQUIRED, DEFER, SKIPPED = _ACQUIRED, _DEFER, _SKIPPED


class Outcome(NamedTuple):
    decision: int
    holders: int
    reclaimed: int
    pending: str


def take(
    leases: _Leases, key: str, token: str, *, limit: int = 2, lease_ms: int = 1000, **kw: Any
) -> Outcome:
    """One acquire of ``token`` on ``key``; the message id defaults to the token."""
    message_id = kw.pop("message_id", token)
    return Outcome(
        *leases.acquire(key, token, limit=limit, lease_ms=lease_ms, message_id=message_id, **kw)
    )
