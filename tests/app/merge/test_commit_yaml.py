"""codecov.yml at a commit through the provider: the fake GitHub behind Prism, real Redis."""

from __future__ import annotations

import pytest

from app.db.models import Repository
from app.merge.commit_yaml import load_yaml, lookups
from app.providers import CallCounter, UnknownCommit
from app.providers.github import GitHub, TokenAuth
from app.providers.http import ProviderHttp
from app.pullrequests.config import MAX_YAML_BYTES, OVERSIZED_YAML, parse_codecov_yaml
from tests.support.fake_github import FakeGitHub, PrismProxy, needs_prism
from tests.support.pipeline import Pipeline

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120), needs_prism]

REPO = "acme/web"


def client(proxy: PrismProxy) -> tuple[GitHub, CallCounter]:
    counter = CallCounter()
    return GitHub(ProviderHttp(proxy.url, timeout_s=10, counter=counter), TokenAuth("t")), counter


@pytest.mark.parametrize(
    ("path", "calls"), [("codecov.yml", 1), (".github/codecov.yml", 12), (None, 12)]
)
def test_the_roots_codecov_yml_is_one_call_and_elsewhere_one_more_round(
    real_pipeline: Pipeline, github: tuple[FakeGitHub, PrismProxy], path: str | None, calls: int
) -> None:
    fake, proxy = github
    sha = "a" * 40
    if path:
        fake.add_file(REPO, sha, path, b"comment: false\n")
        fake.add_file(REPO, sha, ".github/.codecov.yml", b"comment: {layout: files}\n")  # later
    provider, counter = client(proxy)
    repo = Repository(id=1, name=REPO, service="github")

    found = load_yaml(real_pipeline.services, provider, repo, sha, lookups())
    again = load_yaml(real_pipeline.services, provider, repo, sha, lookups())

    assert found == again == ("comment: false\n" if path else None)
    assert counter.counts == {"contents": calls}  # the second read is Redis's


def test_a_commit_github_does_not_have_ends_the_lookup_at_the_first_call(
    real_pipeline: Pipeline, github: tuple[FakeGitHub, PrismProxy]
) -> None:
    fake, proxy = github
    sha = "f" * 40
    fake.state.unknown_commits.add(sha)
    provider, counter = client(proxy)
    repo = Repository(id=1, name=REPO, service="github")

    with pytest.raises(UnknownCommit, match="github has no commit"):
        load_yaml(real_pipeline.services, provider, repo, sha, lookups())
    assert counter.counts == {"contents": 1}


def test_a_file_over_the_limit_is_read_no_further_and_only_its_refusal_is_cached(
    real_pipeline: Pipeline, github: tuple[FakeGitHub, PrismProxy]
) -> None:
    fake, proxy = github
    sha = "c" * 40
    fake.add_file(REPO, sha, "codecov.yml", b"# " + b"x" * (2 * 1024 * 1024) + b"\n")
    fake.add_file(REPO, sha, ".github/codecov.yml", b"comment: false\n")  # never the fallback
    provider, counter = client(proxy)
    repo = Repository(id=1, name=REPO, service="github")
    services = real_pipeline.services

    found = load_yaml(services, provider, repo, sha, lookups())

    assert found == OVERSIZED_YAML
    (error,) = parse_codecov_yaml(found).errors
    assert str(error) == f"(file): larger than {MAX_YAML_BYTES} bytes"
    cached = services.redis.get(f"{services.settings.namespace}:prfeedback:yaml:1:{sha}")
    assert cached == OVERSIZED_YAML.encode() and len(cached) < 100
    assert load_yaml(services, provider, repo, sha, lookups()) == OVERSIZED_YAML
    assert counter.counts == {"contents": 1}
