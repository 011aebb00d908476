"""A provider's pull-request event: the pull request stored, and its feedback sent.

Real PostgreSQL and Redis; the provider is the fake GitHub (or GitLab) behind
Prism, so every call covworker makes is checked against the provider's
description. The events are the providers' own examples.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from app.db import pull_deliveries
from app.db.models import Commit, Pull, PullDelivery, Repository
from app.db.repos import add_repository
from app.feedback import delivery, rows
from app.feedback import prepare as preparing
from app.notify.pull_events import Received, receive
from app.providers import CallCounter, Providers
from app.providers.events import github_pull_event, gitlab_pull_event
from app.providers.github import GitHub, TokenAuth
from app.providers.gitlab import GitLab
from app.providers.http import ProviderHttp
from tests.support.fake_github import FakeGitHub, FakePull, PrismProxy, needs_prism, prism_proxy
from tests.support.fake_gitlab import GITLAB_SPEC, FakeGitLab
from tests.support.pipeline import Pipeline
from tests.support.provider_events import github_pull_event as github_body
from tests.support.provider_events import gitlab_merge_request_event
from tests.support.synthetic import ci_matrix

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120), needs_prism]

REPO = "acme/web"
BASE, NEW_BASE, HEAD = "b" * 40, "c" * 40, "e" * 40
PATCH = "@@ -1,2 +1,4 @@\n line\n+added\n+added\n line\n"


def settle(pipeline: Pipeline, sha: str, branch: str, repo: str = REPO, jobs: int = 1) -> int:
    """Upload ``jobs`` reports, merge and notify ``sha`` on ``branch`` (no pull
    request number): its id."""
    accepted = pipeline.upload(ci_matrix(jobs, files=1, lines=5), repo=repo, sha=sha)
    with pipeline.services.sessions.begin() as session:
        session.execute(sa.update(Commit).where(Commit.sha == sha).values(branch=branch))
    for u in accepted.upload_ids:
        pipeline.process(u)
    pipeline.finish(accepted.repoid, accepted.commitid)
    pipeline.notify(accepted.repoid, accepted.commitid)
    return accepted.commitid


def deliver(pipeline: Pipeline, found: Providers, prepare_id: int) -> None:
    """Deliver a prepare row and every row it wrote, as ``deliver_pull`` does."""
    attempt = delivery.deliver(pipeline.services, found, prepare_id, preparing.prepare)
    assert attempt.state == pull_deliveries.SENT, attempt
    for row in attempt.followups:
        done = delivery.deliver(pipeline.services, found, row, preparing.prepare)
        assert done.state == pull_deliveries.SENT, done


def github_providers(proxy: PrismProxy) -> Providers:
    counter = CallCounter()
    http = ProviderHttp(proxy.url, timeout_s=10, counter=counter)
    return Providers({"github": GitHub(http, TokenAuth("ghp_test"))}, counter)


def opened(pipeline: Pipeline, action: str = "opened", base: str = BASE, **kw: object) -> Received:
    body = github_body(action, REPO, 7, base=("main", base), head=("feature", HEAD), **kw)  # type: ignore[arg-type]
    parsed = github_pull_event(body)
    assert parsed is not None
    return receive(pipeline.services, parsed)


def writes(fake: FakeGitHub) -> int:
    """Provider writes so far: statuses and comments."""
    return len(fake.calls("POST")) + len(fake.calls("PATCH"))


@pytest.fixture
def settled_before_the_pull(
    real_pipeline: Pipeline, github: tuple[FakeGitHub, PrismProxy]
) -> tuple[Pipeline, FakeGitHub, Providers]:
    """BASE on main and HEAD on feature settled and fed back before pull request 7
    existed (push, CI uploads): HEAD got its statuses, no comment."""
    fake, proxy = github
    found = github_providers(proxy)
    with real_pipeline.services.sessions.begin() as session:
        add_repository(session, REPO)
    settle(real_pipeline, BASE, "main")
    # Three CI jobs: the event's writes rank with the version's own (3 uploads).
    head = settle(real_pipeline, HEAD, "feature", jobs=3)
    fake.add_diff(REPO, BASE, HEAD, [("src/pkg/module_000.py", "modified", PATCH)])
    prepare_id = rows.enqueue_prepare(real_pipeline.services, head, 1)
    assert prepare_id is not None
    deliver(real_pipeline, found, prepare_id)
    assert fake.state.statuses[(REPO, HEAD)] and fake.comments_on(REPO, 7) == {}
    fake.add_pull(REPO, FakePull(7, BASE, "main", HEAD, "feature"))  # then the pull is opened
    return real_pipeline, fake, found


def test_a_pull_opened_after_its_head_settled_gets_its_comment_and_statuses(
    settled_before_the_pull: tuple[Pipeline, FakeGitHub, Providers],
) -> None:
    pipeline, fake, found = settled_before_the_pull
    before = len(fake.state.statuses[(REPO, HEAD)])

    received = opened(pipeline)
    assert received.known and received.prepare_id is not None
    deliver(pipeline, found, received.prepare_id)

    comments = fake.comments_on(REPO, 7)
    assert len(comments) == 1
    (body,) = comments.values()
    assert "Report" in body and "main" in body
    # The statuses are the pull request's now (compared with its base), written again.
    contexts = [s["context"] for s in fake.state.statuses[(REPO, HEAD)][before:]]
    assert sorted(contexts) == ["codecov/patch", "codecov/project"]
    with pipeline.services.sessions() as session:
        pull = session.scalars(sa.select(Pull)).one()
        assert (pull.number, pull.base_sha, pull.head_sha) == (7, BASE, HEAD)
        head = session.scalars(sa.select(Commit).where(Commit.sha == HEAD)).one()
        feedback = pull_deliveries.commit_feedback(session, head.id)
    assert feedback is not None and feedback["info"]["pull"]["number"] == 7
    assert {d["target"] for d in feedback["deliveries"]} == {
        "prepare",
        "status:codecov/project",
        "status:codecov/patch",
        "comment",
    }


def test_a_redelivered_event_makes_no_second_comment_and_no_second_write(
    settled_before_the_pull: tuple[Pipeline, FakeGitHub, Providers],
) -> None:
    pipeline, fake, found = settled_before_the_pull
    first = opened(pipeline)
    assert first.prepare_id is not None
    deliver(pipeline, found, first.prepare_id)
    written, requests = writes(fake), len(fake.state.requests)

    again = opened(pipeline)  # GitHub redelivers the same event
    reopened = opened(pipeline, "reopened")  # and the same pull, head and base once more

    assert again.known and again.prepare_id is None and reopened.prepare_id is None
    assert "asked already" in again.detail
    assert len(fake.comments_on(REPO, 7)) == 1
    assert writes(fake) == written and len(fake.state.requests) == requests


def test_a_new_base_recomputes_the_comment_and_statuses(
    settled_before_the_pull: tuple[Pipeline, FakeGitHub, Providers],
) -> None:
    pipeline, fake, found = settled_before_the_pull
    first = opened(pipeline)
    assert first.prepare_id is not None
    deliver(pipeline, found, first.prepare_id)
    settle(pipeline, NEW_BASE, "release")
    fake.add_pull(REPO, FakePull(7, NEW_BASE, "release", HEAD, "feature"))
    fake.add_diff(REPO, NEW_BASE, HEAD, [("src/pkg/module_000.py", "modified", PATCH)])
    title_only = opened(pipeline, "edited", changes={"title": {"from": "old"}})
    assert title_only.prepare_id is None  # an edit that leaves the base asks for nothing

    changed = opened(
        pipeline,
        "edited",
        base=NEW_BASE,
        changes={"base": {"ref": {"from": "main"}, "sha": {"from": BASE}}},
    )

    assert changed.prepare_id is not None
    deliver(pipeline, found, changed.prepare_id)
    assert fake.calls("GET", f"/compare/{NEW_BASE}...{HEAD}")
    (body,) = fake.comments_on(REPO, 7).values()  # the one comment, edited
    assert "release" in body
    with pipeline.services.sessions() as session:
        head = session.scalars(sa.select(Commit).where(Commit.sha == HEAD)).one()
        feedback = pull_deliveries.commit_feedback(session, head.id)
    assert feedback is not None and feedback["info"]["base"] == NEW_BASE


def test_an_event_for_a_head_without_a_report_stores_the_pull_and_sends_nothing(
    real_pipeline: Pipeline, github: tuple[FakeGitHub, PrismProxy]
) -> None:
    fake, proxy = github
    with real_pipeline.services.sessions.begin() as session:
        add_repository(session, REPO)
    settle(real_pipeline, BASE, "main")

    received = opened(real_pipeline)

    assert received.known and received.prepare_id is None and "no settled report" in received.detail
    with real_pipeline.services.sessions() as session:
        assert session.scalars(sa.select(Pull.head_sha)).all() == [HEAD]
        assert session.scalar(sa.select(sa.func.count()).select_from(PullDelivery)) == 0
    # The head settles later: its own feedback reads the stored pull by number.
    fake.add_pull(REPO, FakePull(7, BASE, "main", HEAD, "feature"))
    fake.add_diff(REPO, BASE, HEAD, [("src/pkg/module_000.py", "modified", PATCH)])
    head = settle(real_pipeline, HEAD, "feature")
    prepare_id = rows.enqueue_prepare(real_pipeline.services, head, 1)
    assert prepare_id is not None
    deliver(real_pipeline, github_providers(proxy), prepare_id)
    assert fake.calls("GET", "/pulls/7") and not fake.calls("GET", f"/commits/{HEAD}/pulls")
    assert len(fake.comments_on(REPO, 7)) == 1


def test_an_event_for_an_unknown_repository_stores_nothing(real_pipeline: Pipeline) -> None:
    with real_pipeline.services.sessions.begin() as session:
        add_repository(session, REPO, "gitlab")  # the same name on another service

    received = opened(real_pipeline)

    assert not received.known and received.prepare_id is None
    with real_pipeline.services.sessions() as session:
        assert session.scalar(sa.select(sa.func.count()).select_from(Pull)) == 0


def test_the_event_names_the_default_branch_unless_a_person_set_one(
    real_pipeline: Pipeline,
) -> None:
    from app.feedback.default_branch import set_default_branch

    with real_pipeline.services.sessions.begin() as session:
        add_repository(session, REPO)
    opened(real_pipeline, default_branch="develop")
    with real_pipeline.services.sessions.begin() as session:
        repo = session.scalars(sa.select(Repository)).one()
        assert (repo.default_branch, repo.default_branch_source) == ("develop", "provider")
        set_default_branch(session, repo.id, "trunk")
    opened(real_pipeline, default_branch="main")
    with real_pipeline.services.sessions() as session:
        repo = session.scalars(sa.select(Repository)).one()
        assert (repo.default_branch, repo.default_branch_source) == ("trunk", "set")


def test_the_event_says_whether_the_repository_is_private(real_pipeline: Pipeline) -> None:
    with real_pipeline.services.sessions.begin() as session:
        add_repository(session, REPO)

    def private_after(event: dict[str, object]) -> bool | None:
        parsed = github_pull_event(event)
        assert parsed is not None
        receive(real_pipeline.services, parsed)
        with real_pipeline.services.sessions() as session:
            return session.scalars(sa.select(Repository.provider_private)).one()

    body = github_body("opened", REPO, 7, base=("main", BASE), head=("feature", HEAD))
    body["repository"]["private"] = True
    made_private = private_after(body)
    body["repository"]["private"] = False
    made_public = private_after(body)

    assert (made_private, made_public) == (True, False)


# -- GitLab ------------------------------------------------------------------------

PROJECT = "group/sub/proj"


@pytest.fixture
def gitlab(tmp_path: Path) -> Iterator[tuple[FakeGitLab, PrismProxy]]:
    with FakeGitLab() as fake, prism_proxy(GITLAB_SPEC, fake.url, tmp_path / "prism.log") as p:
        yield fake, p
        assert p.violations() == []


def test_a_merge_request_opened_after_its_head_settled_gets_one_note_and_its_statuses(
    real_pipeline: Pipeline, gitlab: tuple[FakeGitLab, PrismProxy]
) -> None:
    fake, proxy = gitlab
    counter = CallCounter()
    found = Providers(
        {"gitlab": GitLab(ProviderHttp(proxy.url, timeout_s=10, counter=counter), "glpat")},
        counter,
    )
    with real_pipeline.services.sessions.begin() as session:
        add_repository(session, PROJECT, "gitlab")
    settle(real_pipeline, BASE, "main", repo=PROJECT)
    settle(real_pipeline, HEAD, "feature", repo=PROJECT)
    fake.add_pull(PROJECT, FakePull(3, BASE, "main", HEAD, "feature"))
    fake.add_diff(PROJECT, BASE, HEAD, [("src/pkg/module_000.py", "modified", PATCH)])

    def hook(action: str, **kw: object) -> Received:
        body = gitlab_merge_request_event(
            action,
            PROJECT,
            3,
            target_branch="main",
            source_branch="feature",
            head_sha=HEAD,
            **kw,  # type: ignore[arg-type]
        )
        parsed = gitlab_pull_event(body)
        assert parsed is not None
        return receive(real_pipeline.services, parsed)

    received = hook("open")
    assert received.prepare_id is not None
    deliver(real_pipeline, found, received.prepare_id)
    labelled = hook("update")  # a label or title change: no new head, no new base
    again = hook("open")  # GitLab retries a hook it thinks failed

    assert labelled.prepare_id is None and again.prepare_id is None
    assert len(fake.comments_on(PROJECT, 3)) == 1
    assert sorted(s["name"] for s in fake.state.statuses[(PROJECT, HEAD)]) == [
        "codecov/patch",
        "codecov/project",
    ]
