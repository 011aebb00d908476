"""Reporting failures: swallowed (a decision never changes), but warned about and counted."""

from __future__ import annotations

import logging

import pytest

from middleware.gate._metrics import Reporting


def test_a_failing_report_is_warned_about_at_most_once_a_period_and_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    reporting = Reporting(period_s=60)
    caplog.set_level(logging.WARNING)
    for _ in range(5):
        with reporting:
            raise RuntimeError("metrics backend is broken")
    warnings = [r for r in caplog.records if "Reporting a gate decision failed" in r.message]
    assert len(warnings) == 1
    assert reporting.failures == 5
    assert "metrics backend is broken" in warnings[0].getMessage()
