"""The figures every surface shows for one commit: its coverage, its base, the
change, each unrounded and as displayed.

The commit page, the commits list, the repositories page, the badge, the JSON
API, ``covworker report``/``status``/``commits``/``upload --wait`` and the
webhook body read them here; the statuses and the comment compute the same
figures from the full comparison (``app/feedback/prepare.py``) with the
same two rules:

- the base is :func:`app.db.bases.find_base` (a pull request's commit: the pull
  request's base), asked when the figures are read, so a pull request
  covworker learns of after the commit settled counts at once;
- a figure is shown with the repository's ``coverage.precision`` and
  ``coverage.round`` (:func:`display_config`, default 2 and ``down``) through
  :func:`app.pullrequests.numbers.shown`.

In JSON a coverage keeps its unrounded value (``coverage``: percent to 5
decimals, as stored) beside the displayed one (``coverage_display``: the
digits the pages show, without ``%``), and ``rounding`` says how it was made.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.coverage.model import Totals
from app.db.bases import find_base, find_bases
from app.db.models import Commit, CommitReport, Repository
from app.pullrequests.config import CodecovConfig, parse_codecov_yaml
from app.pullrequests.numbers import DisplayRounding, ratio, shown, signed

#: The counts of a stored totals dict (``CommitReport.totals``).
_COUNTS = ("files", "lines", "hits", "misses", "partials")


def display_config(session: Session, repository_id: int) -> CodecovConfig:
    """The ``codecov.yml`` a commit's figures are shown with: the one last read
    from the provider at a head commit (:func:`remember_fetched_yaml`), else
    the one stored with ``covworker repo set --yaml``, else Codecov's defaults."""
    row = session.execute(
        sa.select(Repository.fetched_codecov_yaml, Repository.codecov_yaml).where(
            Repository.id == repository_id
        )
    ).first()
    if row is None:
        return parse_codecov_yaml(None)
    return parse_codecov_yaml(row[0] if row[0] is not None else row[1])


def remember_fetched_yaml(session: Session, repository_id: int, text: str | None) -> None:
    """Keep the ``codecov.yml`` just read from the provider at a head for the
    figures every surface shows (None: the provider has none, so the stored
    one applies again)."""
    session.execute(
        sa.update(Repository)
        .where(Repository.id == repository_id)
        .values(fetched_codecov_yaml=text)
    )


def display_rounding(session: Session, repository_id: int) -> DisplayRounding:
    return DisplayRounding.of(display_config(session, repository_id))


def stored_totals(data: dict[str, Any] | None) -> Totals | None:
    """``CommitReport.totals`` as :class:`Totals`; None: nothing merged."""
    if not data:
        return None
    return Totals(**{k: int(data.get(k, 0)) for k in _COUNTS})


def _coverage(totals: Totals | None) -> Decimal | None:
    return None if totals is None else ratio(totals.hits, totals.lines)


@dataclass(frozen=True, slots=True)
class Headline:
    """One commit's coverage, base and change (the module's rules)."""

    rounding: DisplayRounding
    head: Totals | None  # None: no report merged yet
    base: Commit | None  # None: no base
    base_totals: Totals | None

    @property
    def coverage(self) -> Decimal | None:
        return _coverage(self.head)

    @property
    def base_coverage(self) -> Decimal | None:
        return _coverage(self.base_totals)

    @property
    def change(self) -> Decimal | None:
        """Head minus base coverage, in points; None if either is unknown."""
        head, base = self.coverage, self.base_coverage
        return None if head is None or base is None else head - base

    def show(self, value: Decimal | float | None) -> str | None:
        return shown(self.rounding, value)

    def row_json(self) -> dict[str, Any]:
        """What a list of commits shows of one: coverage, base, change."""
        change = self.change
        return {
            "coverage": _number(self.coverage),
            "coverage_display": self.show(self.coverage),
            "base_commit": self.base.sha if self.base is not None else None,
            "change": _number(change),
            "change_display": None if change is None else signed(self.rounding, change),
        }

    def to_json(self) -> dict[str, Any]:
        """:meth:`row_json`, the base's coverage, and the rounding used."""
        return {
            **self.row_json(),
            "base_coverage": _number(self.base_coverage),
            "base_coverage_display": self.show(self.base_coverage),
            "rounding": self.rounding.to_json(),
        }


def _number(value: Decimal | None) -> float | None:
    return None if value is None else float(value)


def _totals_of(session: Session, commit_id: int) -> Totals | None:
    return stored_totals(
        session.scalar(sa.select(CommitReport.totals).where(CommitReport.commit_id == commit_id))
    )


def commit_headline(
    session: Session,
    commit: Commit,
    *,
    rounding: DisplayRounding | None = None,
    head: Totals | None = None,
) -> Headline:
    """``commit``'s figures now. ``rounding``: the repository's, when the caller
    shows many commits of it; ``head``: its totals, when already read."""
    if rounding is None:
        rounding = display_rounding(session, commit.repository_id)
    if head is None:
        head = _totals_of(session, commit.id)
    base = find_base(session, commit)
    base_totals = _totals_of(session, base.id) if base is not None else None
    return Headline(rounding, head, base, base_totals)


def commit_headlines(
    session: Session, rows: Sequence[tuple[Commit, Totals | None]], rounding: DisplayRounding
) -> list[Headline]:
    """:func:`commit_headline` of each of many commits of one repository, with
    their totals: the bases found together (:func:`app.db.bases.find_bases`)
    and their totals read in one query, what a list of commits shows."""
    bases = find_bases(session, [commit for commit, _ in rows])
    ids = sorted({base.id for base in bases if base is not None})
    base_totals: dict[int, Any] = (
        dict(
            session.execute(
                sa.select(CommitReport.commit_id, CommitReport.totals).where(
                    CommitReport.commit_id.in_(ids)
                )
            )
            .tuples()
            .all()
        )
        if ids
        else {}
    )
    return [
        Headline(
            rounding,
            head,
            base,
            stored_totals(base_totals.get(base.id)) if base is not None else None,
        )
        for (_, head), base in zip(rows, bases, strict=True)
    ]
