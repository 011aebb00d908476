"""Reusable Dramatiq middleware. Knows nothing of coverage or uploads."""

from middleware.argument_validation import ArgumentValidation
from middleware.gate_backends import GateBackend, RedisBackend, StubBackend
from middleware.per_key_concurrency import PerKeyConcurrency

__all__ = ["ArgumentValidation", "GateBackend", "PerKeyConcurrency", "RedisBackend", "StubBackend"]
