"""What the per-format tests share: how a broken report must be refused."""

from __future__ import annotations

import pytest

from app.coverage import parse_report
from app.errors import MalformedReport


def refused(raw: bytes, fmt: str, reason: str) -> MalformedReport:
    """The error ``parse_report(raw)`` raises, checked to be a
    ``MalformedReport`` of format ``fmt`` whose reason says ``reason``; the
    caller checks the line it names."""
    with pytest.raises(MalformedReport) as caught:
        parse_report(raw)
    error = caught.value
    assert error.fmt == fmt
    assert reason in error.reason, error.reason
    return error
