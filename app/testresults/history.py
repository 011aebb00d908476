"""What the history says of a test, across commits.

A test is flaky when it failed and passed on the same commit (recorded in
``test_flakes`` when a commit settles), failed and then passed on a rerun
within its run, or flips on the default branch (both passes and failures
there among its last runs); its fail rate is failures / (passes +
failures) over its last ``testresults_flake_runs`` runs, counted in whole
days of the daily history (the newest days until that many runs are
covered).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.db.models import utcnow
from app.testresults.models import TestDaily, TestFlake, TestIdentity


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


def remember_flakes(session: Session, repository_id: int, commit_id: int, keys: list[int]) -> int:
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
