"""Per-flag coverage of a commit, kept up to date by the finisher's merge.

A flag (``--flag unit``) names a part of the test matrix. Each merge pass
also merges every upload into the report of each of its flags, in the same
transaction as the commit report (whose row lock already serialises merges
of the commit), so ``covworker report --flag unit`` needs no re-parse.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.coverage import codec
from app.coverage.columnar import Accumulator, Part
from app.db.models import CommitFlagReport, Upload, utcnow
from app.testresults.store import TEST_RESULTS_PAYLOAD


class FlagMerge:
    """The flag reports one merge pass touches, loaded once, saved once."""

    def __init__(self, session: Session, commitid: int, upload_ids: list[int]) -> None:
        self._session = session
        self._commitid = commitid
        rows = (
            session.execute(
                sa.select(Upload.id, Upload.flags).where(
                    Upload.id.in_(upload_ids),
                    # a test-results upload has no coverage: no flag report of its own
                    Upload.payload_format.is_distinct_from(TEST_RESULTS_PAYLOAD),
                )
            ).all()
            if upload_ids
            else []
        )
        self._flags: dict[int, list[str]] = {row[0]: list(row[1] or []) for row in rows}
        wanted = sorted({flag for flags in self._flags.values() for flag in flags})
        self._rows: dict[str, CommitFlagReport] = {}
        self._reports: dict[str, Accumulator] = {}
        if wanted:
            for row in session.scalars(
                sa.select(CommitFlagReport).where(
                    CommitFlagReport.commit_id == commitid, CommitFlagReport.flag.in_(wanted)
                )
            ):
                self._rows[row.flag] = row
        self._added: dict[str, int] = {}

    def add(self, upload_id: int, part: Part) -> None:
        """Merge one upload's coverage into the report of each of its flags."""
        for flag in self._flags.get(upload_id, ()):
            report = self._reports.get(flag)
            if report is None:
                row = self._rows.get(flag)
                report = Accumulator()
                # Coverage carried from an ancestor is replaced by the first
                # upload of the flag merged, not added to (app.merge.carryforward).
                if row and row.report and row.carried_from is None:
                    report.add(codec.load_part(row.report))
                self._reports[flag] = report
            report.add(part)
            self._added[flag] = self._added.get(flag, 0) + 1

    def save(self) -> None:
        for flag, report in self._reports.items():
            row = self._rows.get(flag)
            if row is None:
                row = CommitFlagReport(commit_id=self._commitid, flag=flag, uploads=0)
                self._session.add(row)
            if row.carried_from is not None:  # replaced: the flag is the commit's own now
                row.carried_from, row.uploads = None, 0
            row.report = codec.dump_columns(report.files)
            row.totals = dict(report.totals().to_dict())
            row.uploads = (row.uploads or 0) + self._added.get(flag, 0)
            row.updated_at = utcnow()
