"""Reusable Dramatiq middleware. Knows nothing of coverage or uploads."""

from middleware.argument_validation import ArgumentValidation

__all__ = ["ArgumentValidation"]
