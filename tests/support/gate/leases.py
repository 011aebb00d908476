"""Calling the gate's Lua scripts directly, as the lease tests do."""

from __future__ import annotations

from typing import Any, NamedTuple

from middleware.gate.backends import (
    ACQUIRED,
    DEFER,
    SKIPPED,
    GateBackend,
    RedisBackend,
    StubBackend,
)

__all__ = [
    "ACQUIRED",
    "DEFER",
    "SKIPPED",
    "Monotonic",
    "Outcome",
    "expiry",
    "stored_keys",
    "take",
]


class Monotonic:
    """A heartbeat's clock moved by hand: tests set ``now`` and call ``renew_due`` themselves."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


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


def stored_keys(backend: GateBackend) -> list[str]:
    """The keys a backend stores (on Redis: every key of the client's database)."""
    if isinstance(backend, RedisBackend):
        return sorted(k.decode() for k in backend.client.keys("*"))
    assert isinstance(backend, StubBackend)
    return backend.keys()


def expiry(backend: GateBackend, key: str, member: str) -> float | None:
    """When ``member`` of ``key`` expires, in ms of the backend's clock (None if absent)."""
    if isinstance(backend, RedisBackend):
        score = backend.client.zscore(key, member)
        return None if score is None else float(score)
    assert isinstance(backend, StubBackend)
    value = backend._keys.get(key, {}).get(member)
    return None if value is None else float(value)
