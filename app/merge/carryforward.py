"""Carryforward in the merge: the database side of :mod:`app.pullrequests.carryforward`.

Which ``codecov.yml``: the head commit's own, read through the provider
before the commit's first merge pass (:func:`read_head_yaml`, cached per
commit in Redis, the same read the pull-request feedback makes), else the
repository's stored one (``covworker repo set --yaml``). Codecov reads the
commit's yaml in its upload task, before the report is created and the
flags carried; a provider that cannot be read there leaves the stored one.

Where the ancestor search starts (:func:`carry_start`): the commit's parent
when the upload gave one. An upload made as the Codecov GitHub Action makes
it (``-B feature -P 7``, no parent SHA) names none, and the merge asks no
provider for it (Codecov does), so it starts instead at the newest settled
commit of the same branch uploaded before this one (the pull request's
previous push), else at the newest settled commit of the repository's
default branch uploaded before it (the configured default branch, else
``main`` or ``master``). From there first parents are walked.

The carried coverage is stored as the commit's flag report with
``carried_from`` set and merged into the commit's report, so totals count
it. A coverage upload of the flag replaces it when the upload is *merged*
(``app.merge.flag_reports.FlagMerge``: the flag's report starts from that upload,
not from the carried coverage), not when it is merely named by a pass: an
upload whose intermediate was lost is re-driven and replaces the carried
flag when it is merged, so the flag counts once meanwhile and after. The
commit's own uploads are kept apart (``commit_reports.uploaded_report``)
while any flag is carried, and the report is rebuilt from them and the
flags still carried (merging is additive: carried coverage cannot be
subtracted back out). Ancestors are searched once, by the commit's first
merge pass (Codecov does it when the report is created).

:class:`CarryforwardPass` is the merge pass's seam (``app/pipeline/finisher.py``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.coverage import codec
from app.coverage.columnar import Accumulator
from app.coverage.model import Totals
from app.db.bases import default_branch, settled
from app.db.models import Commit, CommitFlagReport, CommitReport, Repository, utcnow
from app.merge.commit_yaml import load_yaml, lookups
from app.providers import ProviderError
from app.pullrequests.carryforward import (
    MAX_ANCESTORS,
    CarriedFlag,
    pick_carried,
    uses_carryforward,
    with_carried,
)
from app.pullrequests.config import MAX_YAML_BYTES, CodecovConfig, parse_codecov_yaml
from app.runtime.services import Services

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class HeadYaml:
    """The head commit's ``codecov.yml`` as read through the provider (None: it has none)."""

    text: str | None


def _parsed(text: str | None) -> CodecovConfig:
    """Parsed once per text; a file over ``MAX_YAML_BYTES`` (refused by the
    parser) is not kept as a cache key: a repository's file is hostile."""
    if text is not None and len(text) > MAX_YAML_BYTES:
        return parse_codecov_yaml(text)
    return _parsed_small(text)


@lru_cache(maxsize=256)
def _parsed_small(text: str | None) -> CodecovConfig:
    return parse_codecov_yaml(text)


def commit_config(session: Session, repository_id: int, head: HeadYaml | None) -> CodecovConfig:
    """The settings the merge carries flags by: the head's own ``codecov.yml``
    when it has one, else the repository's stored one, else defaults."""
    if head is not None and head.text is not None:
        return _parsed(head.text)
    stored = session.scalar(
        sa.select(Repository.codecov_yaml).where(Repository.id == repository_id)
    )
    return _parsed(stored)


def read_head_yaml(services: Services, commit_id: int) -> HeadYaml | None:
    """The commit's ``codecov.yml`` through its repository's provider, when its
    first merge pass is still to come (report version 0) and a provider is
    configured; None when not needed, or not readable (logged: the stored
    file applies, as with Codecov). Cached in Redis per commit, shared with
    the pull-request feedback's read (``commit_yaml.load_yaml``)."""
    if not services.providers.by_service:
        return None
    with services.sessions() as session:
        row = session.execute(
            sa.select(CommitReport.version, Commit.sha, Repository)
            .join(Commit, Commit.id == CommitReport.commit_id)
            .join(Repository, Repository.id == Commit.repository_id)
            .where(CommitReport.commit_id == commit_id)
        ).first()
        if row is None or row.version:
            return None
        repo = row.Repository
        session.expunge(repo)
    provider = services.providers.for_service(repo.service)
    if provider is None:
        return None
    try:
        return HeadYaml(load_yaml(services, provider, repo, row.sha, lookups()))
    except ProviderError as exc:
        logger.warning(
            "codecov.yml of %s at %s could not be read (%s): carryforward uses the stored one.",
            repo.name,
            row.sha,
            exc,
        )
        return None


def carried_flags(session: Session, commit_id: int) -> dict[str, str]:
    """Flag -> the ancestor sha its coverage was carried forward from, for a commit."""
    rows = session.execute(
        sa.select(CommitFlagReport.flag, CommitFlagReport.carried_from).where(
            CommitFlagReport.commit_id == commit_id, CommitFlagReport.carried_from.is_not(None)
        )
    ).all()
    return {flag: sha for flag, sha in rows if sha is not None}


def _ancestors(
    session: Session, repository_id: int, start: str | None
) -> Iterator[tuple[str, list[tuple[str, bytes | None]]]]:
    """The settled first-parent ancestors from ``start`` (up to ``MAX_ANCESTORS``
    walked), nearest first, each with its flag reports."""
    sha, seen = start, set()
    for _ in range(MAX_ANCESTORS):
        if not sha or sha in seen:
            return
        seen.add(sha)
        ancestor = session.execute(
            sa.select(Commit.id, Commit.parent_commit_id, settled(session).label("settled"))
            .outerjoin(CommitReport, CommitReport.commit_id == Commit.id)
            .where(Commit.repository_id == repository_id, Commit.sha == sha)
        ).first()
        if ancestor is None:
            return
        if ancestor.settled:
            rows = session.execute(
                sa.select(CommitFlagReport.flag, CommitFlagReport.report).where(
                    CommitFlagReport.commit_id == ancestor.id
                )
            ).all()
            yield sha, [(flag, report) for flag, report in rows]
        sha = ancestor.parent_commit_id


def find_carried_flags(
    session: Session,
    repository_id: int,
    parent_sha: str | None,
    config: CodecovConfig,
    exclude: set[str],
) -> list[CarriedFlag]:
    """For each carryforward flag not in ``exclude``, its coverage at the nearest
    settled first-parent ancestor that has it (starting at ``parent_sha``)."""
    return pick_carried(config, _ancestors(session, repository_id, parent_sha), exclude)


def _newest_settled_before(
    session: Session, repository_id: int, branch: str, commit_id: int, before: datetime
) -> str | None:
    return session.scalar(
        sa.select(Commit.sha)
        .join(CommitReport, CommitReport.commit_id == Commit.id)
        .where(
            Commit.repository_id == repository_id,
            Commit.branch == branch,
            Commit.id != commit_id,
            Commit.created_at <= before,
            settled(session),
        )
        .order_by(Commit.created_at.desc(), Commit.id.desc())
        .limit(1)
    )


def carry_start(session: Session, commit_id: int) -> str | None:
    """The SHA the ancestor search starts at: the parent, else (no parent SHA
    uploaded) the branch's newest settled commit before this one, else the
    default branch's. See the module's docstring."""
    commit = session.execute(
        sa.select(
            Commit.repository_id, Commit.parent_commit_id, Commit.branch, Commit.created_at
        ).where(Commit.id == commit_id)
    ).one()
    if commit.parent_commit_id:
        return str(commit.parent_commit_id)
    branches = [commit.branch] if commit.branch else []
    default = default_branch(session, commit.repository_id)
    if default and default not in branches:
        branches.append(default)
    for branch in branches:
        found = _newest_settled_before(
            session, commit.repository_id, branch, commit_id, commit.created_at
        )
        if found is not None:
            return found
    return None


class CarryforwardPass:
    """Carryforward within one merge pass (the caller's transaction, the report row locked).

    1. ``own_report``: what the pass merges into, the commit's own uploads;
    2. the pass merges its uploads, and its flag reports (a merged coverage
       upload of a carried flag replaces the carried report there);
    3. ``finish``: after the flag reports are saved, carries flags from the
       ancestors (first pass only) and returns the report to store: own
       uploads plus the flags still carried.
    """

    def __init__(
        self, session: Session, commit_id: int, report_row: CommitReport, head: HeadYaml | None
    ) -> None:
        self._session = session
        self._commit_id = commit_id
        self._row = report_row
        self._head = head
        self._first = report_row.version == 0
        self._had_carried = (
            session.scalar(
                sa.select(sa.func.count())
                .select_from(CommitFlagReport)
                .where(
                    CommitFlagReport.commit_id == commit_id,
                    CommitFlagReport.carried_from.is_not(None),
                )
            )
            or 0
        ) > 0

    def own_report(self) -> bytes | None:
        """The merge of the commit's own uploads so far."""
        if self._had_carried:
            return self._session.scalar(
                sa.select(CommitReport.uploaded_report).where(CommitReport.id == self._row.id)
            )
        return self._row.report

    def finish(self, merged: Accumulator) -> tuple[bytes, Totals, bytes | None]:
        """``(report, totals, uploaded_report)`` to store for the merged own uploads."""
        session = self._session
        if self._first:
            self._carry()
        if not self._first and not self._had_carried:
            return codec.dump_columns(merged.files), merged.totals(), None
        carried_reports = session.scalars(
            sa.select(CommitFlagReport.report).where(
                CommitFlagReport.commit_id == self._commit_id,
                CommitFlagReport.carried_from.is_not(None),
            )
        ).all()
        if not carried_reports:
            return codec.dump_columns(merged.files), merged.totals(), None
        full = with_carried(merged.files, carried_reports)
        return codec.dump_columns(full.files), full.totals(), codec.dump_columns(merged.files)

    def _carry(self) -> None:
        session = self._session
        repository_id = session.scalar(
            sa.select(Commit.repository_id).where(Commit.id == self._commit_id)
        )
        assert repository_id is not None
        config = commit_config(session, repository_id, self._head)
        if not uses_carryforward(config):
            return
        present = set(
            session.scalars(
                sa.select(CommitFlagReport.flag).where(
                    CommitFlagReport.commit_id == self._commit_id
                )
            )
        )
        start = carry_start(session, self._commit_id)
        for carried in find_carried_flags(session, repository_id, start, config, present):
            session.add(
                CommitFlagReport(
                    commit_id=self._commit_id,
                    flag=carried.flag,
                    report=carried.report,
                    totals=carried.totals,
                    uploads=0,
                    carried_from=carried.from_sha,
                    updated_at=utcnow(),
                )
            )
        session.flush()
