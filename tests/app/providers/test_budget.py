"""The per-repository budget of provider calls and the unknown commits, in real Redis;
the GitHub client through Prism in front of the fake GitHub."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from app.providers import OverBudget, Status, UnknownCommit
from app.providers.budget import CallBudget
from app.providers.github import GitHub, TokenAuth
from app.providers.gitlab import GitLab
from app.providers.http import ProviderHttp
from tests.support.fake_github import GITHUB_SPEC, FakeGitHub, PrismProxy, needs_prism, prism_proxy

REPO, OTHER = "acme/noisy", "acme/quiet"
KNOWN, MADE_UP = "a" * 40, "f" * 40


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def budget(
    client: redis.Redis, namespace: str, clock: Clock, per_hour: int = 3600, burst: int = 5
) -> CallBudget:
    return CallBudget(
        client, namespace, per_hour=per_hour, burst=burst, unknown_commit_ttl_s=900, clock=clock
    )


def test_a_repository_gets_its_burst_then_one_call_per_interval(
    redis_client: redis.Redis, namespace: str
) -> None:
    clock = Clock()
    calls = budget(redis_client, namespace, clock)  # 3,600 an hour: one a second

    for _ in range(5):
        calls.spend("github", REPO)
    with pytest.raises(OverBudget) as refused:
        calls.spend("github", REPO)
    # Back once five calls (its burst; at most ten) came back, one a second.
    assert refused.value.retry_in_s == pytest.approx(5.0, abs=0.01)
    assert "COVWORKER_PROVIDER_CALLS_PER_REPOSITORY_HOUR" in str(refused.value)

    clock.now += 1.0
    calls.spend("github", REPO)
    with pytest.raises(OverBudget):
        calls.spend("github", REPO)
    # Another repository's budget is its own.
    for _ in range(5):
        calls.spend("github", OTHER)
    # The key expires once the bucket is full again: nothing is left behind.
    ttl_ms = max(redis_client.pttl(k) for k in redis_client.scan_iter(f"{namespace}:*budget*"))
    assert 0 < ttl_ms <= 5_000


def test_a_budget_of_zero_calls_an_hour_is_no_budget(
    redis_client: redis.Redis, namespace: str
) -> None:
    calls = budget(redis_client, namespace, Clock(), per_hour=0)
    for _ in range(1000):
        calls.spend("github", REPO)
    assert not list(redis_client.scan_iter(f"{namespace}:*budget*"))


def test_an_unknown_commit_is_remembered_for_its_ttl_per_repository(
    redis_client: redis.Redis, namespace: str
) -> None:
    calls = budget(redis_client, namespace, Clock())
    calls.check_commit("github", REPO, MADE_UP)  # not known to be unknown yet
    calls.remember_unknown("github", REPO, MADE_UP)

    with pytest.raises(UnknownCommit, match="has no commit"):
        calls.check_commit("github", REPO, MADE_UP)
    calls.check_commit("github", OTHER, MADE_UP)  # another repository's SHA
    ttls = [redis_client.ttl(k) for k in redis_client.scan_iter(f"{namespace}:*unknown-commit*")]
    assert len(ttls) == 1 and 890 <= ttls[0] <= 900


@pytest.fixture
def github(tmp_path: Path) -> Iterator[tuple[FakeGitHub, PrismProxy]]:
    with FakeGitHub() as fake, prism_proxy(GITHUB_SPEC, fake.url, tmp_path / "prism.log") as p:
        yield fake, p
        assert p.violations() == []


@needs_prism
def test_github_is_not_asked_again_about_a_commit_it_said_it_does_not_have(
    github: tuple[FakeGitHub, PrismProxy], redis_client: redis.Redis, namespace: str
) -> None:
    fake, proxy = github
    fake.state.unknown_commits.add(MADE_UP)
    client = GitHub(
        ProviderHttp(proxy.url, timeout_s=10),
        TokenAuth("ghp_test"),
        budget(redis_client, namespace, Clock(), burst=100),
    )

    with pytest.raises(UnknownCommit, match="remembered for 900 s"):
        client.file_contents(REPO, "codecov.yml", MADE_UP)  # 404 "No commit found for the ref"
    with pytest.raises(UnknownCommit):
        client.pull_for_commit(REPO, MADE_UP)
    with pytest.raises(UnknownCommit):
        client.set_status(REPO, MADE_UP, Status("codecov/project", "pending", "waiting"))
    with pytest.raises(UnknownCommit):
        client.compare(REPO, KNOWN, MADE_UP)

    assert len(fake.state.requests) == 1  # the first answer only
    # A file that is missing at a commit GitHub has is just missing.
    assert client.file_contents(REPO, "codecov.yml", KNOWN) is None
    client.set_status(REPO, KNOWN, Status("codecov/project", "pending", "waiting"))
    assert len(fake.state.requests) == 3


@needs_prism
def test_a_status_for_an_unknown_commit_is_refused_by_github_and_remembered(
    github: tuple[FakeGitHub, PrismProxy], redis_client: redis.Redis, namespace: str
) -> None:
    fake, proxy = github
    fake.state.unknown_commits.add(MADE_UP)
    client = GitHub(
        ProviderHttp(proxy.url, timeout_s=10),
        TokenAuth("ghp_test"),
        budget(redis_client, namespace, Clock(), burst=100),
    )
    status = Status("codecov/project", "pending", "waiting")
    with pytest.raises(UnknownCommit, match="github has no commit"):
        client.set_status(REPO, MADE_UP, status)  # 422 "No commit found for SHA"
    with pytest.raises(UnknownCommit):
        client.set_status(REPO, MADE_UP, status)
    assert len(fake.calls("POST", f"/statuses/{MADE_UP}")) == 1


@needs_prism
def test_a_repository_over_its_budget_makes_no_call_and_another_still_does(
    github: tuple[FakeGitHub, PrismProxy], redis_client: redis.Redis, namespace: str
) -> None:
    fake, proxy = github
    client = GitHub(
        ProviderHttp(proxy.url, timeout_s=10),
        TokenAuth("ghp_test"),
        budget(redis_client, namespace, Clock(), per_hour=60, burst=3),
    )
    status = Status("codecov/project", "success", "90%")
    for _ in range(3):
        client.set_status(REPO, KNOWN, status)
    with pytest.raises(OverBudget) as refused:
        client.set_status(REPO, KNOWN, status)
    assert refused.value.retry_in_s == pytest.approx(180.0, abs=0.01)  # three calls back
    client.set_status(OTHER, KNOWN, status)

    assert len(fake.calls("POST", f"/repos/{REPO}/statuses/")) == 3
    assert len(fake.calls("POST", f"/repos/{OTHER}/statuses/")) == 1


def test_only_a_commit_the_provider_does_not_have_is_an_unknown_commit() -> None:
    assert GitHub.commit_unknown(422, f"No commit found for SHA: {MADE_UP}")
    assert GitHub.commit_unknown(404, f"No commit found for the ref {MADE_UP}")
    assert not GitHub.commit_unknown(404, "Not Found")  # a file, a pull request, a repository
    assert not GitHub.commit_unknown(422, "Validation Failed")
    assert GitLab.commit_unknown(404, "404 Commit Not Found")
    assert not GitLab.commit_unknown(404, "404 File Not Found")
    assert not GitLab.commit_unknown(404, "404 Project Not Found")
