"""The pull-request outbox and the rate limit every repository shares: a
repository over its budget of provider calls is deferred (not failed, no
attempt spent) while another is sent; a commit the provider does not know is
skipped with that reason, without asking again. Real PostgreSQL and Redis,
the fake GitHub behind Prism."""

from __future__ import annotations

from datetime import timedelta

import pytest
import sqlalchemy as sa

from app.db.models import PullDelivery, utcnow
from app.feedback import delivery, rows
from app.feedback import prepare as preparing
from app.providers import CallCounter, Providers
from app.providers.budget import CallBudget
from app.providers.github import GitHub, TokenAuth
from app.providers.http import ProviderHttp
from app.web.ops import pull_request_state
from tests.app.feedback.test_delivery import asking, deliver_prepare, settled_commit
from tests.support.fake_github import FakeGitHub, PrismProxy, needs_prism
from tests.support.pipeline import Pipeline

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120), needs_prism]

REPO, SHA = "acme/web", "a" * 40
QUIET, QUIET_SHA = "acme/quiet", "c" * 40


class Clock:
    def __init__(self) -> None:
        self.now = 2_000_000.0

    def __call__(self) -> float:
        return self.now


def budgeted(
    pipeline: Pipeline, proxy: PrismProxy, clock: Clock, per_hour: int, burst: int
) -> Providers:
    counter = CallCounter()
    budget = CallBudget(
        pipeline.services.redis,
        pipeline.services.settings.namespace,
        per_hour=per_hour,
        burst=burst,
        unknown_commit_ttl_s=900,
        clock=clock,
    )
    http = ProviderHttp(proxy.url, timeout_s=10, counter=counter)
    return Providers({"github": GitHub(http, TokenAuth("ghp_test"), budget)}, counter)


def test_a_repository_over_its_budget_is_deferred_without_an_attempt_and_another_is_sent(
    real_pipeline: Pipeline, github: tuple[FakeGitHub, PrismProxy]
) -> None:
    fake, proxy = github
    clock = Clock()
    found = budgeted(real_pipeline, proxy, clock, per_hour=60, burst=2)  # one a minute
    github_client = found.by_service["github"]
    assert isinstance(github_client, GitHub) and github_client.budget is not None
    github_client.budget.spend("github", REPO)  # the noisy repository spent one already
    noisy = settled_commit(real_pipeline)
    repoid, quiet = real_pipeline.settle(1, repo=QUIET, sha=QUIET_SHA)
    real_pipeline.notify(repoid, quiet)
    services = real_pipeline.services

    prepared = deliver_prepare(real_pipeline, found, noisy, 1, asking("74"))
    status_row, comment_row = prepared.followups
    sent = delivery.deliver(services, found, status_row, asking("74"))
    deferred = delivery.deliver(services, found, comment_row, asking("74"))
    quiet_rows = deliver_prepare(real_pipeline, found, quiet, 1, asking("90")).followups
    quiet_sent = [delivery.deliver(services, found, r, asking("90")) for r in quiet_rows]

    assert sent.state == "sent"
    # Until two calls (its burst) came back: 60 s each, the first due in 60 s.
    assert deferred.state == "pending" and deferred.retry_in_s == pytest.approx(120, abs=0.1)
    assert "spent its budget of 60 github calls an hour" in (deferred.error or "")
    with services.sessions() as session:
        row = session.get(PullDelivery, comment_row)
        assert row is not None and row.state == "pending" and row.attempts == 0
    # The other repository got its status and comment from the same credentials.
    assert [a.state for a in quiet_sent] == ["sent", "sent"]
    assert fake.comments_on(QUIET, 7) and not fake.comments_on(REPO, 7)
    # The operator sees the deferral: on /-/ops with its reason, and counted.
    failing = pull_request_state(services)["failing"]
    assert any("spent its budget" in f["error"] for f in failing)
    held = services.metrics.feedback_held.labels("over_budget")._value.get()
    assert held == 1

    # Deferred again and again, past the horizon: never failed for waiting.
    later = utcnow() + timedelta(seconds=services.settings.pr_delivery_horizon_s + 60)
    again = delivery.deliver(services, found, comment_row, asking("74"), now=later)
    assert again.state == "pending" and again.retry_in_s is not None
    clock.now += 60  # the budget refilled one call
    done = delivery.deliver(services, found, comment_row, asking("74"), now=later)
    assert done.state == "sent"
    assert list(fake.comments_on(REPO, 7).values()) == ["coverage 74 (v1)"]


def test_a_commit_github_does_not_have_is_skipped_with_the_reason_and_not_asked_again(
    real_pipeline: Pipeline, github: tuple[FakeGitHub, PrismProxy]
) -> None:
    fake, proxy = github
    fake.state.unknown_commits.add(SHA)
    found = budgeted(real_pipeline, proxy, Clock(), per_hour=1000, burst=100)
    commit_id = settled_commit(real_pipeline)
    services = real_pipeline.services

    first = delivery.deliver(
        services,
        found,
        rows.enqueue_prepare(services, commit_id, 1) or 0,
        preparing.prepare,
    )
    asked = len(fake.state.requests)
    # The next version of the same commit: no call names it.
    real_pipeline.settle(1, repo=REPO, sha=SHA)
    second = delivery.deliver(
        services,
        found,
        rows.enqueue_prepare(services, commit_id, 2) or 0,
        preparing.prepare,
    )

    assert first.state == second.state == "skipped"
    assert "github has no commit " + SHA in (second.error or "")
    # The first prepare: codecov.yml at the root and the pull lookup, at once,
    # and the repository's default branch (once an interval).
    assert asked <= 3
    assert len(fake.state.requests) == asked
    assert not fake.calls(contains=f"/repos/{REPO}/contents/dev")
    with services.sessions() as session:
        errors = session.scalars(
            sa.select(PullDelivery.error).where(PullDelivery.commit_id == commit_id)
        ).all()
    assert all("has no commit" in (e or "") for e in errors)
