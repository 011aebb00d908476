"""What the history says of a test across commits (app/testresults/history.py):
flaky, its fail rate, the repository's slowest and flakiest tests."""

from __future__ import annotations

import pytest

from app.testresults.history import repository_tests
from tests.support.pipeline import Pipeline
from tests.support.testresults import junit, payload, settle, summary_of, upload_tests

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


def test_a_test_that_flips_on_the_default_branch_is_flaky(pipeline: Pipeline) -> None:
    ok = upload_tests(pipeline, payload(junit(("test_clock", "passed"))), branch="main")
    settle(pipeline, ok)
    bad = upload_tests(
        pipeline, payload(junit(("test_clock", "failed"))), sha="b" * 40, branch="main"
    )
    settle(pipeline, bad)
    got = summary_of(pipeline, ok[0], "b" * 40)
    assert got is not None
    (clock,) = got.failures
    assert clock.failed and clock.flaky and clock.fail_rate == pytest.approx(0.5)
    # the same on a feature branch is a plain failure, not a flake
    feat = upload_tests(
        pipeline, payload(junit(("test_other", "passed"))), sha="c" * 40, branch="feature"
    )
    settle(pipeline, feat)
    feat2 = upload_tests(
        pipeline, payload(junit(("test_other", "failed"))), sha="d" * 40, branch="feature"
    )
    settle(pipeline, feat2)
    other = summary_of(pipeline, ok[0], "d" * 40)
    assert other is not None
    assert [(f.name, f.flaky) for f in other.failures] == [("test_other", False)]
    with pipeline.services.sessions() as session:
        page = repository_tests(session, ok[0], days=90, flake_runs=30)
    assert [t["name"] for t in page["flakiest"]] == ["test_clock"]
    assert {t["name"] for t in page["slowest"]} == {"test_clock", "test_other"}
