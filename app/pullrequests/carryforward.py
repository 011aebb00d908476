"""Carryforward: a flag no upload of a commit names, carried from an ancestor.

Codecov's rule: for each flag with ``carryforward: true`` that no upload of
the commit names, take the flag's coverage from the nearest first-parent
ancestor (up to :data:`MAX_ANCESTORS`) whose report is settled and has the
flag. The carried coverage is stored as the commit's flag report marked
``carried_from`` and counted in the commit's totals; an upload of the flag
replaces it.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from app.pullrequests.config import CodecovConfig

#: First parents walked looking for a flag's coverage (Codecov's limit).
MAX_ANCESTORS = 10


@dataclass(frozen=True, slots=True)
class CarriedFlag:
    flag: str
    from_sha: str
    report: bytes  # ``Report.to_bytes`` of the flag's coverage at ``from_sha``


def find_carried_flags(
    session: Session,
    repository_id: int,
    commit_sha: str,
    parent_sha: str | None,
    flags: list[str],
) -> list[CarriedFlag]:
    """For each of ``flags``, its coverage at the nearest settled ancestor that has it."""
    raise NotImplementedError


def repository_config(session: Session, repository_id: int) -> CodecovConfig:
    """The repository's stored ``codecov.yml`` (``covworker repo set --yaml``), else defaults."""
    raise NotImplementedError
