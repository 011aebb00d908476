"""The gate's Redis backend: each step one Lua script on one key.

Every script touches exactly one key, ``KEYS[1]``, and the gate names its
keys ``<prefix>:{<key>}``: the braces are a Redis Cluster hash tag, so the
backend runs unchanged on a ``redis.cluster.RedisCluster`` client. Time is
Redis server time (``TIME``), so workers' clocks never matter.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from importlib.resources import files
from typing import Any

from middleware.gate.backends.base import PENDING, Ask, Decision, GateBackend, marker_prefix


def _script(name: str) -> str:
    """The Lua source of one step, shipped beside this module (``<name>.lua``)."""
    return files(__package__).joinpath(f"{name}.lua").read_text(encoding="utf-8")


#: Redis error replies that pass: a failover (READONLY, MASTERDOWN), memory
#: pressure (OOM), a busy script (BUSY), loading (LOADING), a cluster moving
#: slots (TRYAGAIN, CLUSTERDOWN).
TRANSIENT_REPLIES = ("READONLY", "OOM", "BUSY", "TRYAGAIN", "LOADING", "MASTERDOWN", "CLUSTERDOWN")


def is_transient_redis_error(exc: BaseException) -> bool:
    """Whether ``exc`` is an error of redis-py that may pass if the call is tried again.

    redis-py is not imported for this: if no module has loaded it, no
    exception can be one of its errors.
    """
    redis = sys.modules.get("redis")
    if redis is None:
        return False
    errors = redis.exceptions
    transient = (
        errors.ConnectionError,
        errors.TimeoutError,
        errors.ReadOnlyError,
        errors.OutOfMemoryError,
        errors.BusyLoadingError,
        errors.TryAgainError,
        errors.ClusterDownError,
    )
    if isinstance(exc, transient):
        return True
    if isinstance(exc, errors.ResponseError):  # also as a Lua script's error reply
        return any(re.search(rf"(^|[\s:-]){reply}\b", str(exc)) for reply in TRANSIENT_REPLIES)
    return False


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class RedisBackend(GateBackend):
    """The gate's leases and markers in Redis (or Redis Cluster).

    Parameters:
      client(redis.Redis | redis.cluster.RedisCluster): The client the
        scripts run on; a cluster client routes each script by its one key.

    Example::

        >>> backend = RedisBackend(redis.Redis.from_url("redis://localhost:6379/0"))
        >>> broker.add_middleware(PerKeyConcurrency(backend=backend))
    """

    def __init__(self, client: Any) -> None:
        self.client = client
        self._acquire = client.register_script(_script("acquire"))
        self._release = client.register_script(_script("release"))
        self._renew = client.register_script(_script("renew"))
        self._mark = client.register_script(_script("mark"))

    def _decide(self, key: str, token: str, ask: Ask) -> Decision:
        args: list[str | int] = [
            token,
            ask.limit,
            ask.lease_ms,
            ask.message_id,
            int(ask.skip_if_pending),
            ask.pending_ttl_ms,
            ask.debounce_ms,
            ask.marker_prefix or PENDING,
        ]
        decision, holders, reclaimed, *pending = self._acquire(keys=[key], args=args)
        pending_id = _text(pending[0]) if pending else ""
        return Decision(int(decision), int(holders), int(reclaimed), pending_id)

    def release(self, key: str, member: str) -> bool:
        return bool(self._release(keys=[key], args=[member]))

    def renew(self, key: str, leases: Sequence[tuple[str, int]]) -> list[str]:
        args: list[str | int] = [part for lease in leases for part in lease]
        return [_text(token) for token in self._renew(keys=[key], args=args)]

    def mark_unless_pending(
        self, key: str, *, message_id: str, pending_ttl_ms: int, actor_name: str, queue_name: str
    ) -> str:
        args = [message_id, pending_ttl_ms, marker_prefix(actor_name, queue_name) or PENDING]
        marked, pending = self._mark(keys=[key], args=args)
        return "" if int(marked) else _text(pending)

    def _live(self, key: str) -> list[str]:
        seconds, micros = self.client.time()
        now_ms = int(seconds) * 1000 + int(micros) // 1000
        return [_text(m) for m in self.client.zrangebyscore(key, f"({now_ms}", "+inf")]
