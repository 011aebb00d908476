"""Reusable Dramatiq middleware. Knows nothing of coverage or uploads."""

from middleware.argument_validation import ArgumentValidation
from middleware.gate import GateBackend, PerKeyConcurrency, RedisBackend, StubBackend

__all__ = ["ArgumentValidation", "GateBackend", "PerKeyConcurrency", "RedisBackend", "StubBackend"]
