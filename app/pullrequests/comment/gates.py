"""Whether a comment is written at all: Codecov's gates."""

from __future__ import annotations

from decimal import Decimal

from app.pullrequests.comparison import Comparison
from app.pullrequests.config import CodecovConfig
from app.pullrequests.numbers import coverage


def should_comment(
    config: CodecovConfig, comparison: Comparison, *, sessions: int, comment_exists: bool
) -> bool:
    """Codecov's gates: ``comment: false``, ``after_n_builds`` (of the comment and
    of ``codecov.notify``), ``require_base``, ``require_changes`` (skipped once
    a comment exists)."""
    settings = config.comment
    if not settings.enabled:
        return False
    if sessions < max(settings.after_n_builds, config.notify_after_n_builds):
        return False
    if settings.require_base and comparison.base is None:
        return False
    if comment_exists or settings.require_changes is False:
        return True
    expression = "any_change" if settings.require_changes is True else settings.require_changes
    return _requirements_met(config, comparison, expression)


def _requirements_met(config: CodecovConfig, comparison: Comparison, expression: str) -> bool:
    def holds(condition: str) -> bool:
        if condition == "any_change":
            return comparison.has_changes()
        if condition == "uncovered_patch":
            patch = coverage(comparison.patch)
            return patch is not None and patch < 100
        if condition == "coverage_drop":
            head, base = coverage(comparison.head), coverage(comparison.base)
            if head is None or base is None:
                return False
            threshold = config.project_statuses[0].threshold if config.project_statuses else 0
            return head < base - (Decimal(str(threshold)) + Decimal("0.01"))
        return False

    return any(
        all(holds(c.strip()) for c in alternative.split(" and "))
        for alternative in expression.split(" or ")
    )
