"""The default branch: learned from the provider (read once an interval), kept
when a person set it. Real Redis and PostgreSQL; GitHub and GitLab are the
fakes behind Prism, so the repository read is checked against their descriptions."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from app.db.models import Repository
from app.db.repos import add_repository
from app.feedback.default_branch import refresh, set_default_branch
from app.providers import CallCounter
from app.providers.github import GitHub, TokenAuth
from app.providers.gitlab import GitLab
from app.providers.http import ProviderHttp
from tests.support.fake_github import FakeGitHub, PrismProxy, needs_prism, prism_proxy
from tests.support.fake_gitlab import GITLAB_SPEC, FakeGitLab
from tests.support.pipeline import Pipeline

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120), needs_prism]


def stored_repo(pipeline: Pipeline, name: str) -> Repository:
    with pipeline.services.sessions.begin() as session:
        found = session.scalar(sa.select(Repository).where(Repository.name == name))
        if found is None:
            add_repository(session, name, "gitlab" if name.count("/") > 1 else "github")
            found = session.scalars(sa.select(Repository).where(Repository.name == name)).one()
        session.expunge(found)
    return found


def branch_of(pipeline: Pipeline, name: str) -> tuple[str | None, str | None]:
    repo = stored_repo(pipeline, name)
    return repo.default_branch, repo.default_branch_source


def test_githubs_default_branch_is_read_once_an_interval_and_a_set_one_is_kept(
    real_pipeline: Pipeline, github: tuple[FakeGitHub, PrismProxy]
) -> None:
    fake, proxy = github
    fake.state.default_branches["acme/web"] = "develop"
    counter = CallCounter()
    provider = GitHub(ProviderHttp(proxy.url, timeout_s=10, counter=counter), TokenAuth("t"))
    repo = stored_repo(real_pipeline, "acme/web")

    refresh(real_pipeline.services, provider, repo)
    fake.state.default_branches["acme/web"] = "trunk"  # renamed on GitHub
    refresh(real_pipeline.services, provider, repo)  # within the interval: not read

    assert counter.counts == {"repository": 1}
    assert branch_of(real_pipeline, "acme/web") == ("develop", "provider")
    real_pipeline.services.redis.delete(
        f"{real_pipeline.services.settings.namespace}:provider:default-branch:{repo.id}"
    )  # the interval has passed
    refresh(real_pipeline.services, provider, repo)
    assert branch_of(real_pipeline, "acme/web") == ("trunk", "provider")

    with real_pipeline.services.sessions.begin() as session:
        set_default_branch(session, repo.id, "release")
    real_pipeline.lose_redis_state()
    refresh(real_pipeline.services, provider, repo)
    assert counter.counts == {"repository": 3}
    assert branch_of(real_pipeline, "acme/web") == ("release", "set")


def test_a_provider_that_fails_leaves_the_branch_and_feedback_goes_on(
    real_pipeline: Pipeline, github: tuple[FakeGitHub, PrismProxy]
) -> None:
    fake, proxy = github
    fake.fail("GET", r"^/repos/acme/web$", 502, 502, 502, 502)
    provider = GitHub(ProviderHttp(proxy.url, timeout_s=10), TokenAuth("t"))

    refresh(real_pipeline.services, provider, stored_repo(real_pipeline, "acme/web"))

    assert branch_of(real_pipeline, "acme/web") == (None, None)


@pytest.fixture
def gitlab(tmp_path: Path) -> Iterator[tuple[FakeGitLab, PrismProxy]]:
    with FakeGitLab() as fake, prism_proxy(GITLAB_SPEC, fake.url, tmp_path / "prism.log") as p:
        yield fake, p
        assert p.violations() == []


def test_gitlabs_default_branch_is_read_from_the_project(
    real_pipeline: Pipeline, gitlab: tuple[FakeGitLab, PrismProxy]
) -> None:
    fake, proxy = gitlab
    fake.state.default_branches["group/sub/proj"] = "develop"
    provider = GitLab(ProviderHttp(proxy.url, timeout_s=10), "glpat")

    refresh(real_pipeline.services, provider, stored_repo(real_pipeline, "group/sub/proj"))

    assert branch_of(real_pipeline, "group/sub/proj") == ("develop", "provider")
