"""Backends of the per-key concurrency gate: Redis (Cluster-safe) and in-memory."""

from middleware.gate.backends.base import ACQUIRED, DEBOUNCE, DEFER, SKIPPED, Decision, GateBackend
from middleware.gate.backends.redis import RedisBackend
from middleware.gate.backends.stub import StubBackend

__all__ = [
    "ACQUIRED",
    "DEBOUNCE",
    "DEFER",
    "SKIPPED",
    "Decision",
    "GateBackend",
    "RedisBackend",
    "StubBackend",
]
