"""The gate's in-memory backend, for tests on Dramatiq's ``StubBroker`` without Redis.

It makes the same decisions as :class:`~middleware.gate.backends.RedisBackend`'s
Lua scripts, under one lock, on this process's clock (``time.time``): one
process only, as Dramatiq's ``StubBackend`` serves its rate limiters.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

from middleware.gate.backends.base import (
    ACQUIRED,
    DEBOUNCE,
    DEFER,
    PENDING,
    SKIPPED,
    Ask,
    Decision,
    GateBackend,
    marker_prefix,
)


class StubBackend(GateBackend):
    """The gate's leases and markers in this process's memory.

    Example::

        >>> broker = StubBroker()
        >>> broker.add_middleware(PerKeyConcurrency(backend=StubBackend()))
    """

    def __init__(self) -> None:
        self._keys: dict[str, dict[str, int]] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _now_ms() -> int:
        return int(time.time() * 1000)

    def _members(self, key: str, now: int) -> tuple[dict[str, int], int]:
        """The live members of ``key`` (expired ones purged) and how many holders were purged."""
        members = self._keys.setdefault(key, {})
        expired = [m for m, expiry in members.items() if expiry <= now]
        for member in expired:
            del members[member]
        return members, sum(1 for m in expired if not m.startswith(PENDING))

    def _tidy(self, key: str) -> None:
        if not self._keys.get(key):
            self._keys.pop(key, None)

    def _decide(self, key: str, token: str, ask: Ask) -> Decision:
        scope = ask.marker_prefix or PENDING
        mine = scope + ask.message_id
        with self._lock:
            now = self._now_ms()
            members, reclaimed = self._members(key, now)
            holders = sum(1 for m in members if not m.startswith(PENDING))
            pending = next((m for m in members if m.startswith(scope)), None)
            try:
                if ask.debounce_ms > 0:
                    if pending is not None and pending != mine:
                        return Decision(SKIPPED, holders, reclaimed, pending[len(scope) :])
                    members[mine] = now + max(ask.pending_ttl_ms, ask.debounce_ms + 1000)
                    return Decision(DEBOUNCE, holders, reclaimed, "")
                if holders < ask.limit:
                    members[token] = now + ask.lease_ms
                    if pending == mine:
                        del members[mine]
                    return Decision(ACQUIRED, holders + 1, reclaimed, "")
                if ask.skip_if_pending and pending is not None and pending != mine:
                    return Decision(SKIPPED, holders, reclaimed, pending[len(scope) :])
                if ask.skip_if_pending:
                    members[mine] = now + ask.pending_ttl_ms
                return Decision(DEFER, holders, reclaimed, "")
            finally:
                self._tidy(key)

    def release(self, key: str, member: str) -> bool:
        with self._lock:
            members, _ = self._members(key, self._now_ms())
            removed = members.pop(member, None) is not None
            self._tidy(key)
            return removed

    def renew(self, key: str, leases: Sequence[tuple[str, int]]) -> list[str]:
        with self._lock:
            now = self._now_ms()
            members = self._keys.get(key, {})
            lost = []
            for token, lease_ms in leases:
                if token in members:  # as the Lua script: purged only by an acquire
                    members[token] = now + lease_ms
                else:
                    lost.append(token)
            return lost

    def mark_unless_pending(
        self, key: str, *, message_id: str, pending_ttl_ms: int, actor_name: str, queue_name: str
    ) -> str:
        scope = marker_prefix(actor_name, queue_name) or PENDING
        with self._lock:
            now = self._now_ms()
            members, _ = self._members(key, now)
            pending = next((m for m in members if m.startswith(scope)), None)
            if pending is not None:
                return pending[len(scope) :]
            members[scope + message_id] = now + pending_ttl_ms
            return ""

    def _live(self, key: str) -> list[str]:
        with self._lock:
            members, _ = self._members(key, self._now_ms())
            self._tidy(key)
            return sorted(members, key=members.__getitem__)

    def keys(self) -> list[str]:
        """The keys that hold a live lease or marker."""
        with self._lock:
            now = self._now_ms()
            for key in list(self._keys):
                self._members(key, now)
                self._tidy(key)
            return sorted(self._keys)
