"""Carryforward: a flag no upload of a commit names, carried from an ancestor.

Codecov's rule: for each flag with ``carryforward: true`` that no upload of
the commit names, take the flag's coverage from the nearest first-parent
ancestor (up to :data:`MAX_ANCESTORS`) whose report is settled and has the
flag (only the files of the flag's ``paths`` when it has some).

Where the search starts (:func:`carry_start`): the commit's parent when the
upload gave one. An upload made as the Codecov GitHub Action makes it
(``-B feature -P 7``, no parent SHA) names none, and the merge asks no
provider (Codecov asks the provider for the parent), so it starts instead at
the newest settled commit of the same branch uploaded before this one (the
pull request's previous push), else at the newest settled commit of the
repository's default branch uploaded before it (the base most pull requests
are opened against: the configured default branch, else ``main`` or
``master``). From there the first parents are walked as usual. The carried
coverage is stored as the commit's flag report with ``carried_from`` set and
is merged into the commit's report, so totals count it as Codecov's do.

An upload of a carried flag replaces the carried coverage: the commit's
report is rebuilt from its own uploads, which ``commit_reports.uploaded_report``
keeps while any flag is carried (merging is additive, so carried coverage
cannot be subtracted back out). The ancestors are searched once, when the
commit's first merge pass runs (Codecov does it when the report is created).

:class:`CarryforwardPass` is the merge pass's seam (``app/pipeline/finisher.py``):
it costs one query per pass for a repository without carryforward flags.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.coverage import codec
from app.coverage.columnar import Accumulator, Part
from app.coverage.model import Totals
from app.db.models import (
    PENDING_STATES,
    Commit,
    CommitFlagReport,
    CommitReport,
    Repository,
    Upload,
    uploads_in_flight,
    utcnow,
)
from app.pullrequests.config import CodecovConfig, parse_codecov_yaml, path_matches

#: First parents walked looking for a flag's coverage (Codecov's limit).
MAX_ANCESTORS = 10


@dataclass(frozen=True, slots=True)
class CarriedFlag:
    flag: str
    from_sha: str
    report: bytes  # ``Report.to_bytes`` of the flag's coverage at ``from_sha``
    totals: dict[str, float]


@lru_cache(maxsize=256)
def _parsed(text: str | None) -> CodecovConfig:
    return parse_codecov_yaml(text)


def repository_config(session: Session, repository_id: int) -> CodecovConfig:
    """The settings the merge uses: the ``codecov.yml`` last read from the provider
    (:func:`remember_fetched_yaml`), else the stored one (``covworker repo set
    --yaml``), else defaults. A head commit's own file is read at notification
    time, after the merge, so the newest one fetched stands in for it."""
    row = session.execute(
        sa.select(Repository.fetched_codecov_yaml, Repository.codecov_yaml).where(
            Repository.id == repository_id
        )
    ).first()
    if row is None:
        return _parsed(None)
    return _parsed(row[0] if row[0] is not None else row[1])


def remember_fetched_yaml(session: Session, repository_id: int, text: str | None) -> None:
    """Keep the ``codecov.yml`` just read from the provider for the next merges
    (None: the provider has none, so the stored one applies again)."""
    session.execute(
        sa.update(Repository)
        .where(Repository.id == repository_id)
        .values(fetched_codecov_yaml=text)
    )


def carried_flags(session: Session, commit_id: int) -> dict[str, str]:
    """Flag -> the ancestor sha its coverage was carried forward from, for a commit."""
    rows = session.execute(
        sa.select(CommitFlagReport.flag, CommitFlagReport.carried_from).where(
            CommitFlagReport.commit_id == commit_id, CommitFlagReport.carried_from.is_not(None)
        )
    ).all()
    return {flag: sha for flag, sha in rows if sha is not None}


def _uses_carryforward(config: CodecovConfig) -> bool:
    return config.default_flag_rule.carryforward or any(
        rule.carryforward for rule in config.flags.values()
    )


def _settled(session: Session, commit_id: int) -> bool:
    version = session.scalar(
        sa.select(CommitReport.version).where(CommitReport.commit_id == commit_id)
    )
    if not version:
        return False
    return not uploads_in_flight(session, commit_id)


def find_carried_flags(
    session: Session,
    repository_id: int,
    parent_sha: str | None,
    config: CodecovConfig,
    exclude: set[str],
) -> list[CarriedFlag]:
    """For each carryforward flag not in ``exclude``, its coverage at the nearest
    settled first-parent ancestor that has it (starting at ``parent_sha``)."""
    found: dict[str, CarriedFlag] = {}
    sha, seen = parent_sha, set()
    for _ in range(MAX_ANCESTORS):
        if not sha or sha in seen:
            break
        seen.add(sha)
        ancestor = session.execute(
            sa.select(Commit.id, Commit.parent_commit_id).where(
                Commit.repository_id == repository_id, Commit.sha == sha
            )
        ).first()
        if ancestor is None:
            break
        if _settled(session, ancestor.id):
            rows = session.execute(
                sa.select(CommitFlagReport.flag, CommitFlagReport.report).where(
                    CommitFlagReport.commit_id == ancestor.id
                )
            ).all()
            for flag, report in rows:
                if flag in found or flag in exclude or report is None:
                    continue
                if not config.is_carryforward(flag):
                    continue
                carried = _within_paths(report, config.flag_rule(flag).paths)
                if carried is not None:
                    found[flag] = CarriedFlag(flag, sha, *carried)
        sha = ancestor.parent_commit_id
    return [found[flag] for flag in sorted(found)]


#: Branches taken as the default when a repository names none (as the pages do).
USUAL_DEFAULT_BRANCHES = ("main", "master")


def _newest_settled_before(
    session: Session, repository_id: int, branch: str, commit_id: int, before: datetime
) -> str | None:
    pending = sa.exists().where(Upload.commit_id == Commit.id, Upload.state.in_(PENDING_STATES))
    return session.scalar(
        sa.select(Commit.sha)
        .join(CommitReport, CommitReport.commit_id == Commit.id)
        .where(
            Commit.repository_id == repository_id,
            Commit.branch == branch,
            Commit.id != commit_id,
            Commit.created_at <= before,
            CommitReport.version > 0,
            ~pending,
        )
        .order_by(Commit.created_at.desc(), Commit.id.desc())
        .limit(1)
    )


def _default_branch(session: Session, repository_id: int) -> str | None:
    configured = session.scalar(
        sa.select(Repository.default_branch).where(Repository.id == repository_id)
    )
    if configured:
        return configured
    found = set(
        session.scalars(
            sa.select(Commit.branch)
            .where(
                Commit.repository_id == repository_id,
                Commit.branch.in_(USUAL_DEFAULT_BRANCHES),
            )
            .distinct()
        )
    )
    return next((b for b in USUAL_DEFAULT_BRANCHES if b in found), None)


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
    default = _default_branch(session, commit.repository_id)
    if default and default not in branches:
        branches.append(default)
    for branch in branches:
        found = _newest_settled_before(
            session, commit.repository_id, branch, commit_id, commit.created_at
        )
        if found is not None:
            return found
    return None


def _within_paths(
    report: bytes, paths: tuple[str, ...] | None
) -> tuple[bytes, dict[str, float]] | None:
    part = codec.load_part(report)
    acc = Accumulator()
    if paths:
        part = Part({p: cols for p, cols in part.files.items() if path_matches(paths, p)})
    acc.add(part)
    if not acc.files:
        return None
    return codec.dump_columns(acc.files), dict(acc.totals().to_dict())


class CarryforwardPass:
    """Carryforward within one merge pass (the caller's transaction, the report row locked).

    1. ``__init__``: drops carried flags that this pass's uploads name (before
       the flag reports are merged, so an upload never merges into carried data);
    2. ``own_report``: what the pass merges into, the commit's own uploads;
    3. ``finish``: after the merge, carries flags from the ancestors (first
       pass only) and returns the report to store: own uploads plus carried flags.
    """

    def __init__(
        self, session: Session, commit_id: int, report_row: CommitReport, upload_ids: list[int]
    ) -> None:
        self._session = session
        self._commit_id = commit_id
        self._row = report_row
        self._first = report_row.version == 0
        carried = session.execute(
            sa.select(CommitFlagReport.id, CommitFlagReport.flag).where(
                CommitFlagReport.commit_id == commit_id,
                CommitFlagReport.carried_from.is_not(None),
            )
        ).all()
        self._had_carried = bool(carried)
        self._own: bytes | None = None
        if self._had_carried:
            self._own = session.scalar(
                sa.select(CommitReport.uploaded_report).where(CommitReport.id == report_row.id)
            )
            named = {
                flag
                for flags in session.scalars(
                    sa.select(Upload.flags).where(Upload.id.in_(upload_ids))
                )
                for flag in flags or ()
            }
            replaced = [row.id for row in carried if row.flag in named]
            if replaced:
                session.execute(
                    sa.delete(CommitFlagReport).where(CommitFlagReport.id.in_(replaced))
                )

    def own_report(self) -> bytes | None:
        """The merge of the commit's own uploads so far."""
        return self._own if self._had_carried else self._row.report

    def finish(self, merged: Accumulator) -> tuple[bytes, Totals, bytes | None]:
        """``(report, totals, uploaded_report)`` to store for the merged own uploads."""
        session = self._session
        if self._first:
            repository_id = session.scalar(
                sa.select(Commit.repository_id).where(Commit.id == self._commit_id)
            )
            assert repository_id is not None
            config = repository_config(session, repository_id)
            if _uses_carryforward(config):
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
        full = Accumulator()
        full.add(Part(merged.files))
        for blob in carried_reports:
            if blob:
                full.add(codec.load_part(blob))
        return codec.dump_columns(full.files), full.totals(), codec.dump_columns(merged.files)
