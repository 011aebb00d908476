"""The per-key concurrency gate: :class:`PerKeyConcurrency` and its backends.

Everything else in this package is private (``_options``, ``_leases``,
``_deferrals``, ``_metrics``); ``backends`` holds the one contract
(:class:`GateBackend`) and its two implementations. The design:
``docs/gate.md``.
"""

from middleware.gate.backends import GateBackend, RedisBackend, StubBackend
from middleware.gate.per_key_concurrency import PerKeyConcurrency

__all__ = ["GateBackend", "PerKeyConcurrency", "RedisBackend", "StubBackend"]
