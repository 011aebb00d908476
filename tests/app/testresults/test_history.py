"""What the history says of a test across commits (app/testresults/history.py):
flaky, its fail rate, the repository's slowest and flakiest tests."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
import sqlalchemy as sa

from app.runtime.services import Services
from app.testresults.history import History, remember_flakes, repository_tests, test_history
from app.testresults.models import TestDaily, TestFlake
from tests.support.pipeline import Pipeline
from tests.support.testresults import (
    junit,
    payload,
    repo_and_commit,
    settle,
    summary_of,
    upload_tests,
)

pytestmark = pytest.mark.timeout(120)


def test_a_test_that_failed_and_passed_on_one_commit_is_flaky_on_later_commits(
    pipeline: Pipeline,
) -> None:
    first = upload_tests(pipeline, payload(junit(("test_net", "failed"))))
    again = upload_tests(pipeline, payload(junit(("test_net", "passed"))))  # the same job re-run
    settle(pipeline, first, again)
    later = upload_tests(pipeline, payload(junit(("test_net", "failed"))), sha="b" * 40)
    settle(pipeline, later)
    got = summary_of(pipeline, later[0], "b" * 40)
    assert got is not None and got.failed == 1
    (net,) = got.failures
    assert net.failed and net.flaky  # it failed here, and is known to flake
    assert net.fail_rate == pytest.approx(2 / 3)  # 2 failures in its 3 runs


def settled_run(
    pipeline: Pipeline, test: str, outcome: str, *, sha: str, branch: str
) -> tuple[int, int, int]:
    """One job's run of the single test ``test`` at ``sha`` on ``branch``, settled."""
    run = upload_tests(pipeline, payload(junit((test, outcome))), sha=sha, branch=branch)
    settle(pipeline, run)
    return run


def test_a_test_that_flips_on_the_default_branch_is_flaky(pipeline: Pipeline) -> None:
    ok = settled_run(pipeline, "test_clock", "passed", sha="a" * 40, branch="main")
    settled_run(pipeline, "test_clock", "failed", sha="b" * 40, branch="main")
    got = summary_of(pipeline, ok[0], "b" * 40)
    assert got is not None
    (clock,) = got.failures
    assert clock.failed and clock.flaky and clock.fail_rate == pytest.approx(0.5)
    # the same on a feature branch is a plain failure, not a flake
    settled_run(pipeline, "test_other", "passed", sha="c" * 40, branch="feature")
    settled_run(pipeline, "test_other", "failed", sha="d" * 40, branch="feature")
    other = summary_of(pipeline, ok[0], "d" * 40)
    assert other is not None
    assert [(f.name, f.flaky) for f in other.failures] == [("test_other", False)]
    with pipeline.services.sessions() as session:
        page = repository_tests(session, ok[0], days=90, flake_runs=30)
    assert [t["name"] for t in page["flakiest"]] == ["test_clock"]
    assert {t["name"] for t in page["slowest"]} == {"test_clock", "test_other"}


def days(services: Services, repo_id: int, key: int, *rows: tuple[int, int, bool, int]) -> None:
    """Daily rows of test ``key``, newest first: (passed, failed, on the default branch, flaky)."""
    today = date(2024, 5, 31)
    with services.sessions.begin() as session:
        session.add_all(
            TestDaily(
                repository_id=repo_id,
                test_key=key,
                day=today - timedelta(days=n),
                default_branch=on_default,
                passed=p,
                failed=f,
                runs=p + f,
                flaky=flaky,
            )
            for n, (p, f, on_default, flaky) in enumerate(rows)
        )


def test_the_fail_rate_counts_whole_days_from_the_newest_until_enough_runs(
    services: Services,
) -> None:
    repo_id, _ = repo_and_commit(services)
    days(services, repo_id, 1, (3, 1, False, 0), (1, 2, False, 0), (0, 10, False, 0))
    with services.sessions() as session:
        got = test_history(session, repo_id, [1, 2], flake_runs=5)
    # 4 runs on the newest day are fewer than 5: the next day counts whole; the third not
    assert (got[1].runs, got[1].failed, got[1].fail_rate) == (7, 3, pytest.approx(3 / 7))
    assert not got[1].flaky  # failures off the default branch alone are no flake
    assert got[2] == History(flaky=False, fail_rate=None, runs=0, failed=0)


def test_a_test_is_flaky_when_it_flips_on_the_default_branch_retries_or_flaked_on_a_commit(
    services: Services,
) -> None:
    repo_id, commit_id = repo_and_commit(services)
    days(services, repo_id, 1, (1, 0, True, 0), (0, 1, True, 0))  # flips on the default branch
    days(services, repo_id, 2, (1, 0, False, 1))  # failed, then passed on a rerun
    days(services, repo_id, 3, (1, 0, True, 0), (0, 1, False, 0))  # only its failure elsewhere
    with services.sessions.begin() as session:
        assert remember_flakes(session, repo_id, commit_id, [4]) == 1
    with services.sessions() as session:
        got = test_history(session, repo_id, [1, 2, 3, 4], flake_runs=30)
        assert test_history(session, repo_id, [], flake_runs=30) == {}
    assert {k: h.flaky for k, h in got.items()} == {1: True, 2: True, 3: False, 4: True}


def test_remembering_a_commits_flakes_twice_stores_them_once(services: Services) -> None:
    repo_id, commit_id = repo_and_commit(services)
    with services.sessions.begin() as session:
        assert remember_flakes(session, repo_id, commit_id, [1, 2]) == 2
    with services.sessions.begin() as session:
        assert remember_flakes(session, repo_id, commit_id, [2, 3]) == 1
        assert remember_flakes(session, repo_id, commit_id, []) == 0
    with services.sessions() as session:
        assert sorted(session.scalars(sa.select(TestFlake.test_key))) == [1, 2, 3]


def test_many_keys_are_read_in_chunks_every_database_takes(services: Services) -> None:
    repo_id, commit_id = repo_and_commit(services)
    keys = list(range(1, 2001))
    with services.sessions.begin() as session:
        assert remember_flakes(session, repo_id, commit_id, keys) == 2000
    with services.sessions() as session:
        got = test_history(session, repo_id, keys, flake_runs=30)
    assert len(got) == 2000 and all(h.flaky for h in got.values())
