"""``codecov/project`` and ``codecov/patch``: states and descriptions as Codecov writes them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from app.pullrequests.compare import Comparison
from app.pullrequests.config import CodecovConfig, StatusRule

PENDING_DESCRIPTION = "Collecting reports and waiting for CI to complete"


@dataclass(frozen=True, slots=True)
class CommitStatus:
    context: str  # codecov/project, codecov/patch, codecov/project/<name>
    state: str  # success | failure | error | pending
    description: str


#: Compares again restricted to a status's flags and paths: (flags, paths) -> Comparison.
Subset = Callable[[tuple[str, ...] | None, tuple[str, ...] | None], Comparison]


def commit_statuses(
    config: CodecovConfig,
    comparison: Comparison,
    *,
    is_pull: bool,
    subset: Subset | None = None,
) -> list[CommitStatus]:
    """Every status the config asks for (skipping ``only_pulls`` ones off a pull
    request and ``if_not_found: ignore`` ones without a base)."""
    raise NotImplementedError


def pending_statuses(config: CodecovConfig, *, is_pull: bool) -> list[CommitStatus]:
    """The statuses while uploads of the commit are in flight."""
    raise NotImplementedError


def project_status(rule: StatusRule, comparison: Comparison, config: CodecovConfig) -> CommitStatus:
    raise NotImplementedError


def patch_status(rule: StatusRule, comparison: Comparison, config: CodecovConfig) -> CommitStatus:
    raise NotImplementedError
