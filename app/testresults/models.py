"""The test-results tables (schema: migration ``0012_test_results``).

Sized for matrices of hundreds of jobs: a commit keeps one row per test
outcome an upload reported (``test_runs``, keyed by the upload and the
case's place in it, so a re-delivered upload writes nothing twice), and
the history across commits is aggregated per test per day
(``test_daily``), so it grows with tests and days, not with runs. Retention
(``app.recovery.retention.drop_expired_test_results``) drops old runs and old days.
"""

from __future__ import annotations

from datetime import date, datetime

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from app.db.models import Base, TZDateTime, utcnow

#: ``test_runs.outcome``: small integers, in this order.
OUTCOME_CODES = {"passed": 0, "failed": 1, "error": 2, "skipped": 3}
OUTCOME_NAMES = {code: name for name, code in OUTCOME_CODES.items()}


class TestResultUpload(Base):
    """An upload whose test cases are stored: written in the same transaction
    as its runs, so its primary key is the once-only fence."""

    __test__ = False  # not a pytest test class

    __tablename__ = "test_result_uploads"

    upload_id: Mapped[int] = mapped_column(sa.ForeignKey("uploads.id"), primary_key=True)
    commit_id: Mapped[int] = mapped_column(sa.ForeignKey("commits.id"), index=True)
    #: Hash of the upload's flags and job: only uploads that share it can
    #: report the same tests (``app.testresults.store.identity_key``).
    identity: Mapped[int] = mapped_column(sa.BigInteger)
    #: Its tests (each once) and JUnit files.
    tests: Mapped[int] = mapped_column(default=0)
    files: Mapped[int] = mapped_column(default=0)
    # Its tests by outcome: a commit's totals add these up without reading runs.
    passed: Mapped[int] = mapped_column(default=0)
    failed: Mapped[int] = mapped_column(default=0)
    errored: Mapped[int] = mapped_column(default=0)
    skipped: Mapped[int] = mapped_column(default=0)
    flaky: Mapped[int] = mapped_column(default=0)
    created_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow, index=True)
    #: When retention dropped its runs (its counts stay).
    runs_dropped_at: Mapped[datetime | None] = mapped_column(TZDateTime, default=None)


class TestIdentity(Base):
    """A test as the history knows it: suite and name, plus the upload's
    flags and job (a matrix runs the same test once per job)."""

    __test__ = False  # not a pytest test class

    __tablename__ = "tests"

    repository_id: Mapped[int] = mapped_column(sa.ForeignKey("repositories.id"), primary_key=True)
    #: 64-bit hash of (suite, name, flags, job): ``app.testresults.store.test_key``.
    test_key: Mapped[int] = mapped_column(sa.BigInteger, primary_key=True, autoincrement=False)
    suite: Mapped[str] = mapped_column(sa.Text)
    name: Mapped[str] = mapped_column(sa.Text)
    flags: Mapped[str] = mapped_column(sa.String(1024), default="")
    job: Mapped[str] = mapped_column(sa.String(255), default="")
    created_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow)


class TestRun(Base):
    """One test of one upload (its attempts within the run folded into one):
    how it ended, in how long, and why."""

    __test__ = False  # not a pytest test class

    __tablename__ = "test_runs"
    #: Finds a commit's failed, errored and retried runs without reading the passes.
    __table_args__ = (
        sa.Index("ix_test_runs_commit_outcome", "commit_id", "outcome", "retried_failures"),
    )

    upload_id: Mapped[int] = mapped_column(sa.ForeignKey("uploads.id"), primary_key=True)
    seq: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    commit_id: Mapped[int] = mapped_column(sa.ForeignKey("commits.id"))
    test_key: Mapped[int] = mapped_column(sa.BigInteger)
    outcome: Mapped[int] = mapped_column(sa.SmallInteger)
    #: Reruns inside the case that failed first (Surefire, nextest).
    retried_failures: Mapped[int] = mapped_column(sa.SmallInteger, default=0)
    duration: Mapped[float] = mapped_column(sa.Float, default=0.0)
    message: Mapped[str | None] = mapped_column(sa.Text, default=None)


class TestDaily(Base):
    """A test's runs of one day, on the default branch or elsewhere."""

    __test__ = False  # not a pytest test class

    __tablename__ = "test_daily"

    repository_id: Mapped[int] = mapped_column(sa.ForeignKey("repositories.id"), primary_key=True)
    test_key: Mapped[int] = mapped_column(sa.BigInteger, primary_key=True, autoincrement=False)
    day: Mapped[date] = mapped_column(sa.Date, primary_key=True)
    default_branch: Mapped[bool] = mapped_column(primary_key=True)
    runs: Mapped[int] = mapped_column(default=0)
    passed: Mapped[int] = mapped_column(default=0)
    #: Failed or errored.
    failed: Mapped[int] = mapped_column(default=0)
    skipped: Mapped[int] = mapped_column(default=0)
    #: Runs that failed and then passed within the run (a rerun).
    flaky: Mapped[int] = mapped_column(default=0)
    duration_sum: Mapped[float] = mapped_column(sa.Float, default=0.0)


class TestFlake(Base):
    """A test that failed and passed on the same commit (the same code)."""

    __test__ = False  # not a pytest test class

    __tablename__ = "test_flakes"
    __table_args__ = (sa.Index("ix_test_flakes_created", "created_at"),)

    repository_id: Mapped[int] = mapped_column(sa.ForeignKey("repositories.id"), primary_key=True)
    test_key: Mapped[int] = mapped_column(sa.BigInteger, primary_key=True, autoincrement=False)
    commit_id: Mapped[int] = mapped_column(sa.ForeignKey("commits.id"), primary_key=True)
    created_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow)
