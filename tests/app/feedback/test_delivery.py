"""The pull-request outbox on real PostgreSQL, writing to a fake GitHub behind Prism.

``prepare`` here is given (the statuses and the comment a version asks
for): these tests are about delivery, each write once, in order, retried,
superseded, never twice; what a version asks for is
:mod:`app.feedback.prepare`'s and :mod:`app.pullrequests`' business.
"""

from __future__ import annotations

import dataclasses
import functools
from datetime import timedelta
from typing import Any

import pytest
import sqlalchemy as sa

from app.cli.render import pull_request_rows
from app.db import pull_deliveries
from app.db.models import Commit, PullDelivery, Repository, utcnow
from app.db.pull_deliveries import COMMENT, status_target
from app.feedback import delivery, rows
from app.feedback import prepare as preparing
from app.feedback.rows import Prepared, Target
from app.providers import CallCounter, Providers
from app.providers.github import GitHub, TokenAuth
from app.providers.http import ProviderHttp
from app.pullrequests.statuses import PENDING_DESCRIPTION
from app.queries import commit_status
from app.web.ops import pull_request_state
from tests.support.fake_github import FakeGitHub, PrismProxy, needs_prism
from tests.support.pipeline import Pipeline
from tests.support.synthetic import ci_matrix
from tests.support.threads import all_at_once

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120), needs_prism]

REPO, SHA = "acme/web", "a" * 40


def providers(proxy: PrismProxy) -> Providers:
    counter = CallCounter()
    http = ProviderHttp(proxy.url, timeout_s=10, counter=counter)
    return Providers({"github": GitHub(http, TokenAuth("ghp_test"))}, counter)


def settled_commit(pipeline: Pipeline) -> int:
    repoid, commitid = pipeline.settle(2, repo=REPO, sha=SHA)
    pipeline.notify(repoid, commitid)
    return commitid


def asking(coverage: str, *, pull: int = 7, behavior: str = "default") -> delivery.PrepareFn:
    """A prepare that asks for codecov/project at ``coverage`` and a comment saying it."""

    def prepare(services: Any, provider: Any, repo: Any, commit: Any, version: int) -> Prepared:
        return Prepared(
            targets=[
                Target(
                    status_target("codecov/project"),
                    {
                        "context": "codecov/project",
                        "state": "success",
                        "description": f"{coverage}% (+0.00%) compared to b11ecec",
                        "target_url": f"http://cov.example/{REPO}/commit/{SHA}",
                    },
                ),
                Target(
                    COMMENT,
                    {
                        "pull": pull,
                        "body": f"coverage {coverage} (v{version})",
                        "behavior": behavior,
                    },
                ),
            ],
            info={"pull": {"number": pull}},
        )

    return prepare


def deliver_prepare(
    pipeline: Pipeline,
    found: Providers,
    commit_id: int,
    version: int,
    prepare: delivery.PrepareFn,
) -> rows.Attempt:
    """Enqueue and deliver a version's prepare row; its followups are the rows it wrote."""
    prepare_id = rows.enqueue_prepare(pipeline.services, commit_id, version)
    assert prepare_id is not None
    return delivery.deliver(pipeline.services, found, prepare_id, prepare)


def run_version(
    pipeline: Pipeline,
    found: Providers,
    commit_id: int,
    version: int,
    prepare: delivery.PrepareFn,
) -> list[rows.Attempt]:
    """Deliver a version's prepare row, then every row it wrote."""
    first = deliver_prepare(pipeline, found, commit_id, version, prepare)
    return [first] + [
        delivery.deliver(pipeline.services, found, row, prepare) for row in first.followups
    ]


def rows_of(pipeline: Pipeline, commit_id: int) -> dict[tuple[int, str], PullDelivery]:
    with pipeline.services.sessions() as session:
        found = session.scalars(sa.select(PullDelivery).where(PullDelivery.commit_id == commit_id))
        return {(r.report_version, r.target): r for r in found}


@dataclasses.dataclass
class Settled:
    """A settled commit of REPO, the fake GitHub, and providers that reach it
    through Prism: the commit's versions delivered to the fake."""

    pipeline: Pipeline
    fake: FakeGitHub
    found: Providers
    commit_id: int

    def run(self, version: int, prepare: delivery.PrepareFn) -> list[rows.Attempt]:
        return run_version(self.pipeline, self.found, self.commit_id, version, prepare)

    def prepare_row(self, version: int, prepare: delivery.PrepareFn) -> rows.Attempt:
        return deliver_prepare(self.pipeline, self.found, self.commit_id, version, prepare)

    def deliver(self, row: int, prepare: delivery.PrepareFn, **kw: Any) -> rows.Attempt:
        return delivery.deliver(self.pipeline.services, self.found, row, prepare, **kw)

    def rows(self) -> dict[tuple[int, str], PullDelivery]:
        return rows_of(self.pipeline, self.commit_id)


@pytest.fixture
def settled(real_pipeline: Pipeline, github: tuple[FakeGitHub, PrismProxy]) -> Settled:
    fake, proxy = github
    return Settled(real_pipeline, fake, providers(proxy), settled_commit(real_pipeline))


def test_a_settled_version_sends_each_status_and_the_comment_once(settled: Settled) -> None:
    fake = settled.fake

    attempts = settled.run(1, asking("74.29"))

    assert [a.state for a in attempts] == ["sent", "sent", "sent"]
    assert [s["description"] for s in fake.state.statuses[(REPO, SHA)]] == [
        "74.29% (+0.00%) compared to b11ecec"
    ]
    assert list(fake.comments_on(REPO, 7).values()) == ["coverage 74.29 (v1)"]
    # Delivering any row again sends nothing: it is no longer pending.
    for row in settled.rows().values():
        again = settled.deliver(row.id, asking("74.29"))
        assert not again.attempted
    assert settled.found.counter.counts == {"status": 1, "comment": 1}


def test_a_newer_version_edits_the_comment_and_skips_an_identical_status(settled: Settled) -> None:
    fake = settled.fake
    settled.run(1, asking("74.29"))
    (comment_id,) = fake.comments_on(REPO, 7)

    settled.run(2, asking("74.29"))
    settled.run(3, asking("80.00"))

    assert fake.comments_on(REPO, 7) == {comment_id: "coverage 80.00 (v3)"}
    assert comment_id > 2**31
    assert len(fake.calls("POST", "/issues/7/comments")) == 1
    assert len(fake.calls("PATCH", f"/issues/comments/{comment_id}")) == 2
    # Version 2's status said what version 1's did: not sent again.
    assert [s["description"] for s in fake.state.statuses[(REPO, SHA)]] == [
        "74.29% (+0.00%) compared to b11ecec",
        "80.00% (+0.00%) compared to b11ecec",
    ]


def test_a_comment_deleted_by_someone_is_posted_again_by_default(settled: Settled) -> None:
    fake = settled.fake
    settled.run(1, asking("74.29"))
    (first,) = fake.comments_on(REPO, 7)
    with fake.lock:
        del fake.state.comments[first]

    settled.run(2, asking("80.00"))

    assert list(fake.comments_on(REPO, 7).values()) == ["coverage 80.00 (v2)"]


def test_behavior_new_deletes_the_old_comment_and_posts_a_new_one(settled: Settled) -> None:
    fake = settled.fake
    settled.run(1, asking("74.29", behavior="new"))
    (first,) = fake.comments_on(REPO, 7)

    settled.run(2, asking("80.00", behavior="new"))

    comments = fake.comments_on(REPO, 7)
    assert first not in comments and list(comments.values()) == ["coverage 80.00 (v2)"]


def test_behavior_once_edits_in_place_but_never_posts_again_once_deleted(settled: Settled) -> None:
    fake = settled.fake
    settled.run(1, asking("74.29", behavior="once"))
    (first,) = fake.comments_on(REPO, 7)
    settled.run(2, asking("75.00", behavior="once"))
    assert fake.comments_on(REPO, 7) == {first: "coverage 75.00 (v2)"}
    with fake.lock:
        del fake.state.comments[first]

    settled.run(3, asking("80.00", behavior="once"))

    assert fake.comments_on(REPO, 7) == {}
    assert len(fake.calls("POST", "/issues/7/comments")) == 1


def test_behavior_spammy_posts_a_new_comment_for_every_version(settled: Settled) -> None:
    for version in (1, 2, 3):
        settled.run(version, asking(str(version), behavior="spammy"))

    assert sorted(settled.fake.comments_on(REPO, 7).values()) == [
        "coverage 1 (v1)",
        "coverage 2 (v2)",
        "coverage 3 (v3)",
    ]


def test_concurrent_commits_of_a_pull_request_never_produce_two_comments_and_the_newest_wins(
    real_pipeline: Pipeline, github: tuple[FakeGitHub, PrismProxy]
) -> None:
    """Eight pushes to one pull request, their comments written by eight threads at once."""
    fake, proxy = github
    found = providers(proxy)
    fake.state.latency_s = 0.05  # the writes overlap
    comment_rows: list[int] = []
    newest = 0
    for n in range(8):
        sha = f"{n + 1:040x}"
        accepted = real_pipeline.upload(ci_matrix(1, files=1, lines=5), repo=REPO, sha=sha)
        real_pipeline.process(accepted.upload_ids[0])
        real_pipeline.finish(accepted.repoid, accepted.commitid)
        newest = max(newest, accepted.commitid)
        attempt = deliver_prepare(
            real_pipeline, found, accepted.commitid, 1, asking(str(accepted.commitid))
        )
        comment_rows += [
            r
            for r in attempt.followups
            if rows_of(real_pipeline, accepted.commitid)[(1, COMMENT)].id == r
        ]
    deliver = functools.partial(delivery.deliver, real_pipeline.services, found)

    # Raises what any of the deliveries raised.
    all_at_once([functools.partial(deliver, row, asking("unused")) for row in comment_rows])

    assert len(comment_rows) == 8
    assert list(fake.comments_on(REPO, 7).values()) == [f"coverage {newest} (v1)"]
    assert len(fake.calls("POST", "/issues/7/comments")) == 1
    with real_pipeline.services.sessions() as session:
        states = session.scalars(
            sa.select(PullDelivery.state).where(PullDelivery.id.in_(comment_rows))
        ).all()
    assert set(states) <= {"sent", "superseded"} and len(states) == 8


def test_a_provider_answering_502_then_200_gets_the_version_once(
    real_pipeline: Pipeline, settled: Settled
) -> None:
    fake = settled.fake
    fake.fail("POST", r"/statuses/", 502)
    (status_row, _comment_row) = settled.prepare_row(1, asking("74.29")).followups

    failed = settled.deliver(status_row, asking("74.29"))
    assert failed.retry_in_s == real_pipeline.services.settings.pr_delivery_min_backoff_s
    assert "502" in (failed.error or "")
    early = settled.deliver(status_row, asking("74.29"))
    assert not early.attempted  # not due yet
    later = utcnow() + timedelta(seconds=failed.retry_in_s + 1)
    retried = settled.deliver(status_row, asking("74.29"), now=later)

    assert retried.state == "sent"
    assert len(fake.state.statuses[(REPO, SHA)]) == 1
    assert len(fake.calls("POST", "/statuses/")) == 2  # the 502 and the one that counted
    row = settled.rows()[(1, status_target("codecov/project"))]
    assert (row.state, row.attempts, row.error) == ("sent", 2, None)


def test_a_secondary_rate_limit_waits_as_long_as_github_asks_before_trying_again(
    settled: Settled,
) -> None:
    fake = settled.fake
    fake.fail("POST", r"/issues/7/comments", 403, headers={"Retry-After": "90"})
    _, comment_row = settled.prepare_row(1, asking("74.29")).followups

    limited = settled.deliver(comment_row, asking("74.29"))
    soon = utcnow() + timedelta(seconds=60)  # past the backoff, not past Retry-After
    early = settled.deliver(comment_row, asking("x"), now=soon)
    later = utcnow() + timedelta(seconds=91)
    retried = settled.deliver(comment_row, asking("74.29"), now=later)

    assert limited.retry_in_s == 90 and "rate limited (403" in (limited.error or "")
    assert not early.attempted
    assert retried.state == "sent"
    assert list(fake.comments_on(REPO, 7).values()) == ["coverage 74.29 (v1)"]


def test_a_repository_the_token_cannot_see_is_recorded_on_the_commit_not_retried(
    real_pipeline: Pipeline, settled: Settled
) -> None:
    fake = settled.fake
    fake.state.forbidden.add(REPO)
    status_row, _ = settled.prepare_row(1, asking("74.29")).followups

    attempt = settled.deliver(status_row, asking("74.29"))

    assert attempt.state == "failed" and attempt.retry_in_s is None
    with real_pipeline.services.sessions() as session:
        feedback = pull_deliveries.commit_feedback(session, settled.commit_id)
    assert feedback is not None
    failed = [d for d in feedback["deliveries"] if d["state"] == "failed"]
    assert len(failed) == 1
    assert "github refused access to acme/web (404)" in failed[0]["error"]
    # ... and shown where people look: `covworker status` and /-/ops.
    status = commit_status(real_pipeline.services, REPO, SHA)
    rows_shown = dict(pull_request_rows(status["pull_request"]))
    assert rows_shown["pr status:codecov/project"].startswith("failed after 1 attempt(s): github")
    ops = pull_request_state(real_pipeline.services)
    assert [f["target"] for f in ops["failing"]] == ["status:codecov/project"]
    assert "refused access" in ops["failing"][0]["error"]


def test_a_newer_prepare_supersedes_an_older_versions_pending_rows(settled: Settled) -> None:
    fake = settled.fake
    old_rows = settled.prepare_row(1, asking("1")).followups

    settled.run(2, asking("2"))
    for row in old_rows:  # version 1's messages arrive late
        assert not settled.deliver(row, asking("1")).attempted

    assert list(fake.comments_on(REPO, 7).values()) == ["coverage 2 (v2)"]
    assert [s["description"][:1] for s in fake.state.statuses[(REPO, SHA)]] == ["2"]
    states = {k: r.state for k, r in settled.rows().items()}
    assert states[(1, COMMENT)] == states[(1, status_target("codecov/project"))] == "superseded"


def test_without_credentials_for_the_service_a_version_is_skipped(
    real_pipeline: Pipeline,
) -> None:
    commit_id = settled_commit(real_pipeline)
    with real_pipeline.services.sessions.begin() as session:
        session.execute(sa.update(Repository).values(service="gitlab"))

    attempt = deliver_prepare(real_pipeline, Providers.none(), commit_id, 1, asking("74.29"))

    assert attempt.state == "skipped"
    assert "no gitlab credentials" in (attempt.error or "")
    with real_pipeline.services.sessions() as session:
        assert session.scalar(sa.select(sa.func.count()).select_from(Commit)) == 1


def test_statuses_say_pending_while_uploads_are_in_flight_and_a_late_pending_never_wins(
    real_pipeline: Pipeline, github: tuple[FakeGitHub, PrismProxy]
) -> None:
    fake, proxy = github
    found = providers(proxy)
    accepted = real_pipeline.upload(ci_matrix(3, files=1, lines=5), repo=REPO, sha=SHA)
    real_pipeline.process(accepted.upload_ids[0])
    real_pipeline.finish(accepted.repoid, accepted.commitid)
    commit_id = accepted.commitid

    pending_id = rows.enqueue_pending(real_pipeline.services, commit_id)
    assert pending_id is not None
    assert rows.enqueue_pending(real_pipeline.services, commit_id) is None  # one per version
    sent = delivery.deliver(
        real_pipeline.services, found, pending_id, asking("x"), pending=preparing.pending
    )
    assert sent.state == "sent"
    assert [
        (s["context"], s["state"], s["description"]) for s in fake.state.statuses[(REPO, SHA)]
    ] == [
        ("codecov/project", "pending", PENDING_DESCRIPTION),
        ("codecov/patch", "pending", PENDING_DESCRIPTION),
    ]

    # A second finisher pass while the rest are in flight: its pending row is
    # created now but delivered only after the version settled and reported.
    real_pipeline.process(accepted.upload_ids[1])
    real_pipeline.finish(accepted.repoid, commit_id)
    late = rows.enqueue_pending(real_pipeline.services, commit_id)
    assert late is not None
    real_pipeline.process(accepted.upload_ids[2])
    real_pipeline.finish(accepted.repoid, commit_id)
    real_pipeline.notify(accepted.repoid, commit_id)
    with real_pipeline.services.sessions() as session:
        version = session.scalar(
            sa.select(PullDelivery.report_version).where(PullDelivery.id == late)
        )
    assert version is not None
    run_version(real_pipeline, found, commit_id, version, asking("74.29"))
    stale = delivery.deliver(
        real_pipeline.services, found, late, asking("x"), pending=preparing.pending
    )

    assert not stale.attempted  # the version's report superseded it
    assert rows_of(real_pipeline, commit_id)[(version, "pending")].state == "superseded"
    project = [s for s in fake.state.statuses[(REPO, SHA)] if s["context"] == "codecov/project"]
    assert [s["state"] for s in project] == ["pending", "success"]


def test_a_status_row_prepared_again_while_its_write_is_in_flight_is_written_again(
    settled: Settled, github: tuple[FakeGitHub, PrismProxy]
) -> None:
    """A version prepared again (a later settled state of it) while the first
    write of its status is at the provider: that write ends without taking the
    row, which the second prepare's delivery then writes."""
    fake, proxy = github
    pipeline, commit_id = settled.pipeline, settled.commit_id
    again: list[int] = []

    class Interleaved(GitHub):
        def set_status(self, repo: str, sha: str, status: Any) -> None:
            if not again:  # the first write is in flight: the version is prepared again
                with pipeline.services.sessions.begin() as session:
                    prepare_id = rows.arm_prepare(session, commit_id, 1, 3, again=True)
                assert prepare_id is not None
                redo = delivery.deliver(pipeline.services, found, prepare_id, asking("80.00"))
                again.extend(redo.followups)
            super().set_status(repo, sha, status)

    counter = CallCounter()
    http = ProviderHttp(proxy.url, timeout_s=10, counter=counter)
    found = Providers({"github": Interleaved(http, TokenAuth("ghp_test"))}, counter)
    status_row, _ = settled.prepare_row(1, asking("74.29")).followups

    first = delivery.deliver(pipeline.services, found, status_row, asking("74.29"))
    for row in again:
        delivery.deliver(pipeline.services, found, row, asking("unused"))

    assert first.state == "sent"
    assert [s["description"] for s in fake.state.statuses[(REPO, SHA)]] == [
        "74.29% (+0.00%) compared to b11ecec",
        "80.00% (+0.00%) compared to b11ecec",
    ]
    assert settled.rows()[(1, status_target("codecov/project"))].state == "sent"
