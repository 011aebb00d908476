"""Reusable Dramatiq middleware. Knows nothing of coverage or uploads."""

from middleware.argument_validation import ArgumentValidation
from middleware.per_key_concurrency import PerKeyConcurrency

__all__ = ["ArgumentValidation", "PerKeyConcurrency"]
