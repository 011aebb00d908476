"""One repository cannot spend the rate limit every repository shares: real
``covworker serve``, a real worker, PostgreSQL and Redis, the fake GitHub
behind Prism (GitHub's OpenAPI description), uploads through codecov-cli's
protocol.

- An upload of a SHA GitHub does not have costs at most two calls (the one
  GitHub refuses, and the repository's default branch once an hour), and a
  further upload of it none; its feedback is skipped with the reason.
- A ``codecov.yml`` asking for 502 statuses (500 flags) gets 50 a version,
  and the comment shows the config error.
- A repository past its budget of calls is deferred; another repository on
  the same credentials still gets its comment and statuses.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.fake_github import PRISM, FakePull
from tests.support.provider_calls import OVER_BUDGET, feedback_stack, many_flags_yaml
from tests.support.services import require_redis

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.integration,
    pytest.mark.timeout(600),
    pytest.mark.skipif(not PRISM.exists(), reason="Prism not installed (.ci/run)"),
]

NOISY, QUIET = "acme/noisy", "acme/quiet"
MADE_UP, MADE_UP_2 = "f" * 40, "e" * 40
BASE, HEAD, QUIET_HEAD = "b" * 40, "c" * 40, "d" * 40
#: The pull requests' diff: lines 5 to 8 of the uploaded file added.
DIFF = [("src/app.py", "modified", "@@ -4,0 +5,4 @@\n+a\n+b\n+c\n+d\n")]


def test_a_made_up_sha_costs_at_most_two_calls_and_500_flags_get_50_statuses(
    tmp_path: Path, namespace: str
) -> None:
    require_redis()
    with feedback_stack(tmp_path, namespace) as stack:
        fake = stack.fake
        fake.state.unknown_commits |= {MADE_UP, MADE_UP_2}
        token = stack.add_repo(NOISY)

        costs = []
        for sha, version in ((MADE_UP, 1), (MADE_UP, 2), (MADE_UP_2, 1)):
            mark = stack.mark()
            stack.upload(NOISY, token, sha)
            stack.feedback_done(sha, version)
            costs.append(stack.calls(NOISY, mark))
        skipped = stack.deliveries(MADE_UP)

        fake.add_pull(NOISY, FakePull(7, BASE, "main", HEAD, "feature"))
        fake.add_diff(NOISY, BASE, HEAD, DIFF)
        yml = many_flags_yaml(500)
        fake.add_file(NOISY, HEAD, "codecov.yml", yml.encode())
        mark = stack.mark()
        stack.upload(NOISY, token, HEAD, branch="feature", pull=7)
        stack.feedback_done(HEAD, 1)
        flagged = stack.calls(NOISY, mark)
        comments = list(fake.comments_on(NOISY, 7).values())
        statuses = fake.state.statuses.get((NOISY, HEAD), [])

    assert stack.proxy.violations() == []
    # The first upload: the SHA named once (GitHub's 422 or 404), and the
    # repository read (its default branch, once an hour); then nothing.
    assert len(costs[0]) <= 2, costs[0]
    assert costs[1] == [], costs[1]
    assert len(costs[2]) == 1, costs[2]
    assert all("No commit found" not in c for c in costs[1])
    assert all(state == "skipped" and "has no commit" in (error or "")
               for _, target, state, error in skipped if target != "pending"), skipped  # fmt: skip

    final = [s for s in statuses if s["state"] != "pending"]
    assert len({s["context"] for s in final}) == len(final) == 50
    assert len([c for c in flagged if c.startswith("POST") and "/statuses/" in c]) <= 100
    assert len(flagged) <= 120, len(flagged)
    assert len(comments) == 1
    assert "asks for 502 statuses on a commit; covworker sends at most 50" in comments[0]
    assert len(yml) > 19_900


def test_a_repository_over_its_budget_is_deferred_while_another_gets_its_feedback(
    tmp_path: Path, namespace: str
) -> None:
    require_redis()
    with feedback_stack(
        tmp_path,
        namespace,
        COVWORKER_PROVIDER_CALLS_PER_REPOSITORY_HOUR="60",
        COVWORKER_PROVIDER_CALLS_BURST="30",
    ) as stack:
        fake = stack.fake
        noisy, quiet = stack.add_repo(NOISY), stack.add_repo(QUIET)
        fake.add_pull(NOISY, FakePull(7, BASE, "main", HEAD, "feature"))
        fake.add_diff(NOISY, BASE, HEAD, DIFF)
        fake.add_file(NOISY, HEAD, "codecov.yml", many_flags_yaml(500).encode())
        fake.add_pull(QUIET, FakePull(8, BASE, "main", QUIET_HEAD, "feature"))
        fake.add_diff(QUIET, BASE, QUIET_HEAD, DIFF)

        stack.upload(NOISY, noisy, HEAD, branch="feature", pull=7)
        stack.feedback_done(HEAD, 1)
        stack.upload(QUIET, quiet, QUIET_HEAD, branch="feature", pull=8)
        stack.feedback_done(QUIET_HEAD, 1)

        noisy_calls, quiet_calls = stack.calls(NOISY), stack.calls(QUIET)
        noisy_rows = stack.deliveries(HEAD)
        quiet_comments = fake.comments_on(QUIET, 8)
        quiet_statuses = fake.state.statuses.get((QUIET, QUIET_HEAD), [])

    assert stack.proxy.violations() == []
    assert len(noisy_calls) == 30  # its burst, then nothing
    deferred = [r for r in noisy_rows if r[2] == "pending" and OVER_BUDGET in (r[3] or "")]
    assert len(deferred) >= 20, noisy_rows
    assert all(r[2] != "failed" for r in noisy_rows)
    # The other repository, on the same credentials, got everything.
    assert len(quiet_comments) == 1
    final = {s["context"]: s["state"] for s in quiet_statuses if s["state"] != "pending"}
    assert set(final) == {"codecov/project", "codecov/patch"}
    assert len(quiet_calls) < 30
