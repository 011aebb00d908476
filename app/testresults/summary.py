"""What a commit's test results say.

Per commit, over every test-results upload of it: each test (suite, name,
flags, job) counts once. A test that failed and passed on the commit
(retried in its run, or re-run by another upload) is *flaky* there and
counts as passed; one that only failed counts as failed (or errored), not
once per attempt. A failure is also marked flaky when its history says so
(:mod:`app.testresults.history`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.testresults.history import remember_flakes, test_history

__all__ = [
    "CommitTests",
    "Failure",
    "commit_tests",
    "settled_summary",
    "shared_counts",
    "unreadable_uploads",
]
from app.db.models import Upload, UploadState
from app.testresults.models import TestIdentity, TestResultUpload, TestRun

#: Failures listed per commit at most (the totals count them all).
MAX_FAILURES_LISTED = 500


@dataclass(frozen=True, slots=True)
class Failure:
    name: str
    suite: str
    message: str | None
    flaky: bool
    #: Seconds the failing run took.
    duration: float
    flags: str = ""
    job: str = ""
    #: Failures / runs over the last runs (None: no history yet).
    fail_rate: float | None = None
    #: Still failing on this commit (False: it failed, then passed: flaky here).
    failed: bool = True

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "suite": self.suite,
            "message": self.message,
            "flaky": self.flaky,
            "failed": self.failed,
            "duration": self.duration,
            "flags": self.flags.split(",") if self.flags else [],
            "job": self.job or None,
            "fail_rate": self.fail_rate,
        }


@dataclass(slots=True)
class CommitTests:
    """A commit's test results: what ``GET .../commits/SHA/tests`` answers."""

    uploads: int
    passed: int = 0
    failed: int = 0
    errored: int = 0
    skipped: int = 0
    #: Tests that failed and passed on this commit (counted in ``passed``).
    flaky: int = 0
    failures: list[Failure] = field(default_factory=list)

    @property
    def total(self) -> int:
        return self.passed + self.failed + self.errored + self.skipped

    def totals(self) -> dict[str, int]:
        return {
            "passed": self.passed,
            "failed": self.failed,
            "errored": self.errored,
            "skipped": self.skipped,
            "flaky": self.flaky,
            "total": self.total,
        }

    def as_json(self) -> dict[str, Any]:
        return {
            "uploads": self.uploads,
            "totals": self.totals(),
            "failures": [f.as_json() for f in self.failures],
        }


def _per_test(upload_ids: list[int]) -> Any:
    """One row per test of these uploads: which outcomes it had."""

    def had(code: int) -> Any:
        return sa.func.max(sa.case((TestRun.outcome == code, 1), else_=0))

    return (
        sa.select(
            TestRun.test_key.label("key"),
            had(0).label("p"),
            had(1).label("f"),
            had(2).label("e"),
            had(3).label("s"),
            sa.func.max(TestRun.retried_failures).label("r"),
        )
        .where(TestRun.upload_id.in_(upload_ids))
        .group_by(TestRun.test_key)
        .subquery()
    )


def _scan(session: Session, commit_id: int) -> tuple[list[int], dict[int, bool]]:
    """The commit's totals (passed, failed, errored, skipped, flaky) and each
    test that failed or is flaky here: key -> still failing (False: it passed too).

    Only uploads with the same flags and job can report the same test. An
    upload alone with its flags and job adds its own counts (kept with it),
    and its failed and retried runs are one row per test; only uploads that
    share theirs are read run by run, grouped by test."""
    uploads = session.execute(
        sa.select(
            TestResultUpload.upload_id,
            TestResultUpload.identity,
            TestResultUpload.passed,
            TestResultUpload.failed,
            TestResultUpload.errored,
            TestResultUpload.skipped,
            TestResultUpload.flaky,
            TestResultUpload.runs_dropped_at,
        ).where(TestResultUpload.commit_id == commit_id)
    ).all()
    by_identity: dict[int, list[Any]] = {}
    for row in uploads:
        by_identity.setdefault(row.identity, []).append(row)
    totals = [0, 0, 0, 0, 0]
    shared: list[int] = []
    for rows in by_identity.values():
        # Retention folded the counts of uploads whose runs it dropped
        # (``fold_counts``): those add up; the others are read as usual.
        counted = [r for r in rows if r.runs_dropped_at is not None]
        live = [r for r in rows if r.runs_dropped_at is None]
        if len(live) > 1:
            shared.extend(r.upload_id for r in live)
        else:
            counted += live
        for row in counted:
            for i, value in enumerate(
                (row.passed, row.failed, row.errored, row.skipped, row.flaky)
            ):
                totals[i] += int(value)
    listed = {
        int(key): outcome in (1, 2)
        for key, outcome in session.execute(
            sa.select(TestRun.test_key, TestRun.outcome).where(
                TestRun.commit_id == commit_id,
                sa.or_(
                    TestRun.outcome.in_((1, 2)),
                    sa.and_(TestRun.outcome == 0, TestRun.retried_failures > 0),
                ),
                TestRun.upload_id.not_in(shared) if shared else sa.true(),
            )
        )
    }
    if shared:
        _scan_shared(session, shared, totals, listed)
    return totals, listed


def _failing_and_flaky(per: Any) -> tuple[Any, Any]:
    failing = sa.and_(per.c.p == 0, sa.or_(per.c.f == 1, per.c.e == 1))
    flaky_here = sa.and_(per.c.p == 1, sa.or_(per.c.f == 1, per.c.e == 1, per.c.r > 0))
    return failing, flaky_here


def shared_counts(session: Session, upload_ids: list[int]) -> list[int]:
    """(passed, failed, errored, skipped, flaky) of uploads that share their
    flags and job, each test once, read run by run: a test that failed and
    passed is flaky and passed, one that only failed is failed (or errored)."""
    per = _per_test(upload_ids)
    _, flaky_here = _failing_and_flaky(per)

    def count(condition: Any) -> Any:
        return sa.func.coalesce(sa.func.sum(sa.case((condition, 1), else_=0)), 0)

    row = session.execute(
        sa.select(
            count(per.c.p == 1),
            count(sa.and_(per.c.p == 0, per.c.f == 1)),
            count(sa.and_(per.c.p == 0, per.c.f == 0, per.c.e == 1)),
            count(sa.and_(per.c.p == 0, per.c.f == 0, per.c.e == 0, per.c.s == 1)),
            count(flaky_here),
        )
    ).one()
    return [int(value) for value in row]


def _scan_shared(
    session: Session, upload_ids: list[int], totals: list[int], listed: dict[int, bool]
) -> None:
    """Add the tests of uploads that share their flags and job, read run by run."""
    for i, value in enumerate(shared_counts(session, upload_ids)):
        totals[i] += value
    per = _per_test(upload_ids)
    failing, flaky_here = _failing_and_flaky(per)
    for key, still in session.execute(
        sa.select(per.c.key, failing.label("failing")).where(sa.or_(failing, flaky_here))
    ):
        listed[int(key)] = bool(still)


def commit_tests(
    session: Session,
    repository_id: int,
    commit_id: int,
    flake_runs: int = 30,
    *,
    record_flakes: bool = False,
) -> CommitTests | None:
    """The commit's test results; None if it has no test-results upload.

    ``record_flakes`` (the settled commit's notification): remember the
    tests that failed and passed here, for later commits' flakiness."""
    uploads = session.scalar(
        sa.select(sa.func.count()).where(TestResultUpload.commit_id == commit_id)
    )
    if not uploads:
        return None
    (passed, failed, errored, skipped, flaky), listed = _scan(session, commit_id)
    result = CommitTests(int(uploads), passed, failed, errored, skipped, flaky)
    if record_flakes:
        remember_flakes(session, repository_id, commit_id, [k for k, f in listed.items() if not f])
    if listed:
        shown = dict(sorted(listed.items(), key=lambda kv: not kv[1])[:MAX_FAILURES_LISTED])
        result.failures = _failures(session, repository_id, commit_id, shown, flake_runs)
    return result


def _failures(
    session: Session, repository_id: int, commit_id: int, keys: dict[int, bool], flake_runs: int
) -> list[Failure]:
    """The listed tests with their names, their latest failure's message and
    duration, and whether they are flaky here or in the history."""
    names = {
        row.test_key: row
        for row in session.execute(
            sa.select(
                TestIdentity.test_key,
                TestIdentity.suite,
                TestIdentity.name,
                TestIdentity.flags,
                TestIdentity.job,
            ).where(TestIdentity.repository_id == repository_id, TestIdentity.test_key.in_(keys))
        )
    }
    latest: dict[int, tuple[str | None, float]] = {}
    for key, message, duration in session.execute(
        sa.select(TestRun.test_key, TestRun.message, TestRun.duration)
        .where(
            TestRun.commit_id == commit_id,
            TestRun.test_key.in_(keys),
            sa.or_(TestRun.outcome.in_((1, 2)), TestRun.retried_failures > 0),
        )
        .order_by(TestRun.upload_id, TestRun.seq)
    ):
        latest[key] = (message, float(duration))
    history = test_history(session, repository_id, list(keys), flake_runs)
    failures = []
    for key, failing in keys.items():
        ident = names.get(key)
        if ident is None:  # pragma: no cover - written in the runs' transaction
            continue
        message, duration = latest.get(key, (None, 0.0))
        known = history.get(key)
        failures.append(
            Failure(
                name=ident.name,
                suite=ident.suite,
                message=message,
                flaky=not failing or (known is not None and known.flaky),
                duration=duration,
                flags=ident.flags,
                job=ident.job,
                fail_rate=known.fail_rate if known else None,
                failed=failing,
            )
        )
    failures.sort(key=lambda f: (f.flaky, f.suite, f.name, f.job))
    return failures


def settled_summary(
    session: Session, repository_id: int, commit_id: int, flake_runs: int = 30
) -> dict[str, Any] | None:
    """For the notification and its webhook: the totals and failures of the
    settled commit, after recording its flaky tests; None without test results."""
    tests = commit_tests(session, repository_id, commit_id, flake_runs, record_flakes=True)
    if tests is None:
        return None
    return {
        "totals": tests.totals(),
        "failures": [f.as_json() for f in tests.failures[:50]],
    }


def unreadable_uploads(session: Session, commit_id: int) -> int:
    """The commit's test-results uploads that could not be read (state ``error``):
    ``tests_section(..., unreadable_uploads=...)`` says so when none could."""
    from app.testresults.store import TEST_RESULTS_PAYLOAD

    return int(
        session.scalar(
            sa.select(sa.func.count()).where(
                Upload.commit_id == commit_id,
                Upload.payload_format == TEST_RESULTS_PAYLOAD,
                Upload.state == UploadState.ERROR,
            )
        )
        or 0
    )
