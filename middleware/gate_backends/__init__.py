"""Backends of the per-key concurrency gate: Redis (Cluster-safe) and in-memory."""

from middleware.gate_backends.base import ACQUIRED, DEBOUNCE, DEFER, SKIPPED, Decision, GateBackend
from middleware.gate_backends.redis import RedisBackend
from middleware.gate_backends.stub import StubBackend

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
