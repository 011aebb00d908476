"""What a commit's test results say, and what the history says of a test.

Per commit, over every test-results upload of it: each test (suite, name,
flags, job) counts once. A test that failed and passed on the commit
(retried in its run, or re-run by another upload) is *flaky* there and
counts as passed; one that only failed counts as failed (or errored), not
once per attempt.

Across commits a test is flaky when it failed and passed on the same
commit (recorded in ``test_flakes`` when a commit settles) or flips on the
default branch (both passes and failures there among its last runs); its
fail rate is failures / (passes + failures) over its last
``testresults_flake_runs`` runs, counted in whole days of the daily
history (the newest days until that many runs are covered).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.db.models import utcnow
from app.testresults.models import TestDaily, TestFlake, TestIdentity, TestResultUpload, TestRun

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
        ).where(TestResultUpload.commit_id == commit_id)
    ).all()
    by_identity: dict[int, list[Any]] = {}
    for row in uploads:
        by_identity.setdefault(row.identity, []).append(row)
    totals = [0, 0, 0, 0, 0]
    shared: list[int] = []
    for rows in by_identity.values():
        if len(rows) > 1:
            shared.extend(r.upload_id for r in rows)
            continue
        (row,) = rows
        for i, value in enumerate((row.passed, row.failed, row.errored, row.skipped, row.flaky)):
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


def _scan_shared(
    session: Session, upload_ids: list[int], totals: list[int], listed: dict[int, bool]
) -> None:
    """Add the tests of uploads that share their flags and job, read run by run."""
    per = _per_test(upload_ids)
    failing = sa.and_(per.c.p == 0, sa.or_(per.c.f == 1, per.c.e == 1))
    flaky_here = sa.and_(per.c.p == 1, sa.or_(per.c.f == 1, per.c.e == 1, per.c.r > 0))

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
    for i, value in enumerate(row):
        totals[i] += int(value)
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
        _record_flakes(session, repository_id, commit_id, [k for k, f in listed.items() if not f])
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


@dataclass(frozen=True, slots=True)
class History:
    flaky: bool
    fail_rate: float | None
    runs: int
    failed: int


def _chunks(keys: list[int], size: int = 900) -> list[list[int]]:
    """``keys`` in lists short enough for one ``IN`` on any database."""
    return [keys[i : i + size] for i in range(0, len(keys), size)]


def test_history(
    session: Session, repository_id: int, keys: list[int], flake_runs: int
) -> dict[int, History]:
    """Each test's flakiness and fail rate over its last ``flake_runs`` runs."""
    if not keys:
        return {}
    flaky_keys: set[int] = set()
    days: dict[int, list[tuple[int, int, int, bool, int]]] = {}
    for chunk in _chunks(keys):
        flaky_keys |= set(
            session.scalars(
                sa.select(TestFlake.test_key)
                .where(TestFlake.repository_id == repository_id, TestFlake.test_key.in_(chunk))
                .distinct()
            )
        )
        for key, passed, failed, runs, on_default, flaky in session.execute(
            sa.select(
                TestDaily.test_key,
                TestDaily.passed,
                TestDaily.failed,
                TestDaily.runs,
                TestDaily.default_branch,
                TestDaily.flaky,
            )
            .where(TestDaily.repository_id == repository_id, TestDaily.test_key.in_(chunk))
            .order_by(TestDaily.day.desc())
        ):
            days.setdefault(key, []).append((passed, failed, runs, on_default, flaky))
    found = {}
    for key in keys:
        passed = failed = runs = 0
        default_pass = default_fail = retried = 0
        for p, f, r, on_default, flaky in days.get(key, []):
            if runs >= flake_runs:
                break
            passed, failed, runs, retried = passed + p, failed + f, runs + r, retried + flaky
            if on_default:
                default_pass, default_fail = default_pass + p, default_fail + f
        flips = default_pass > 0 and default_fail > 0
        rate = failed / (passed + failed) if passed + failed else None
        found[key] = History(key in flaky_keys or flips or retried > 0, rate, runs, failed)
    return found


def _record_flakes(session: Session, repository_id: int, commit_id: int, keys: list[int]) -> int:
    """Remember ``keys`` as having failed and passed on this commit (idempotent)."""
    if not keys:
        return 0
    have: set[int] = set()
    for chunk in _chunks(keys):
        have |= set(
            session.scalars(
                sa.select(TestFlake.test_key).where(
                    TestFlake.repository_id == repository_id,
                    TestFlake.commit_id == commit_id,
                    TestFlake.test_key.in_(chunk),
                )
            )
        )
    now = utcnow()
    new = [k for k in keys if k not in have]
    try:
        with session.begin_nested():
            session.add_all(
                TestFlake(
                    repository_id=repository_id, test_key=k, commit_id=commit_id, created_at=now
                )
                for k in new
            )
            session.flush()
    except sa.exc.IntegrityError:  # a concurrent notify of the same commit recorded them
        return 0
    return len(new)


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


def repository_tests(
    session: Session, repository_id: int, days: int, flake_runs: int, limit: int = 20
) -> dict[str, Any]:
    """The slowest tests (mean duration over ``days``) and the flakiest
    (fail rate among flaky tests) of a repository."""
    since = (utcnow() - timedelta(days=days)).date()
    recent = (
        sa.select(
            TestDaily.test_key,
            sa.func.sum(TestDaily.runs).label("runs"),
            sa.func.sum(TestDaily.duration_sum).label("duration"),
            sa.func.sum(TestDaily.failed).label("failed"),
            sa.func.sum(TestDaily.flaky).label("flaky"),
        )
        .where(TestDaily.repository_id == repository_id, TestDaily.day >= since)
        .group_by(TestDaily.test_key)
        .subquery()
    )
    mean = (recent.c.duration / sa.func.nullif(recent.c.runs, 0)).label("mean")
    slow = session.execute(
        sa.select(recent.c.test_key, mean, recent.c.runs).order_by(mean.desc()).limit(limit)
    ).all()
    candidates = set(
        session.scalars(
            sa.select(recent.c.test_key).where(sa.or_(recent.c.failed > 0, recent.c.flaky > 0))
        )
    )
    candidates |= set(
        session.scalars(
            sa.select(TestFlake.test_key).where(TestFlake.repository_id == repository_id).distinct()
        )
    )
    history = test_history(session, repository_id, list(candidates), flake_runs)
    flaky = sorted(
        (k for k, h in history.items() if h.flaky),
        key=lambda k: (-(history[k].fail_rate or 0.0), k),
    )[:limit]
    keys = {k for k, _m, _r in slow} | set(flaky)
    names = (
        {
            row.test_key: row
            for row in session.execute(
                sa.select(TestIdentity).where(
                    TestIdentity.repository_id == repository_id, TestIdentity.test_key.in_(keys)
                )
            ).scalars()
        }
        if keys
        else {}
    )

    def ident(key: int) -> dict[str, Any]:
        row = names.get(key)
        return {
            "name": row.name if row else "?",
            "suite": row.suite if row else "",
            "flags": row.flags.split(",") if row and row.flags else [],
            "job": (row.job or None) if row else None,
        }

    return {
        "days": days,
        "slowest": [
            {**ident(k), "mean_duration": float(m or 0.0), "runs": int(r)} for k, m, r in slow
        ],
        "flakiest": [
            {
                **ident(k),
                "fail_rate": history[k].fail_rate,
                "runs": history[k].runs,
                "failed": history[k].failed,
            }
            for k in flaky
        ],
    }


test_history.__test__ = False  # type: ignore[attr-defined]  # pytest: not a test
