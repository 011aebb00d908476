"""The GitHub client against a fake GitHub behind Prism (GitHub's OpenAPI description).

Every request the client sends and every answer the fake gives goes
through ``prism proxy ... --errors``: a request or an answer the official
description does not allow fails the call and shows in Prism's log.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from app.providers import AccessDenied, Status
from app.providers.github import AppAuth, GitHub, TokenAuth
from app.providers.http import ProviderHttp
from tests.support.fake_github import (
    GITHUB_SPEC,
    ROOT,
    FakeGitHub,
    FakePull,
    PrismProxy,
    needs_prism,
    prism_proxy,
)
from tests.support.providers import comment_written_edited_and_deleted

pytestmark = needs_prism

BASE, HEAD = "a" * 40, "b" * 40
PATCH = "@@ -1,2 +1,3 @@\n a = 1\n+b = 2\n c = 3"
CREATE_STATUS = (
    ROOT
    / ".ci/node/node_modules/@octokit/fixtures/scenarios/api.github.com/create-status"
    / "normalized-fixture.json"
)


@pytest.fixture
def github(tmp_path: Path) -> Iterator[tuple[FakeGitHub, PrismProxy]]:
    """The fake GitHub behind Prism; a call its OpenAPI description refuses fails the test."""
    with FakeGitHub() as fake, prism_proxy(GITHUB_SPEC, fake.url, tmp_path / "prism.log") as p:
        yield fake, p
        assert p.violations() == []


def client(proxy: PrismProxy, auth: TokenAuth | AppAuth | None = None) -> GitHub:
    return GitHub(ProviderHttp(proxy.url, timeout_s=10), auth or TokenAuth("ghp_test"))


def test_every_call_covworker_makes_is_valid_github_api_both_ways(
    github: tuple[FakeGitHub, PrismProxy],
) -> None:
    fake, proxy = github
    fake.add_pull("octo/app", FakePull(7, BASE, "main", HEAD, "feature"))
    fake.add_diff(
        "octo/app",
        BASE,
        HEAD,
        [
            ("src/pkg/mod.py", "modified", PATCH),
            ("big.bin", "added", None),
            ("pkg/__init__.py", "added", ""),  # empty: no patch, 0 changes
        ],
    )
    fake.add_file("octo/app", HEAD, "src/pkg/mod.py", b"a = 1\nb = 2\nc = 3\n")
    gh = client(proxy)

    assert gh.pull_for_commit("octo/app", HEAD) == gh.pull("octo/app", 7)
    pull = gh.pull("octo/app", 7)
    assert pull is not None
    assert (pull.number, pull.base_sha, pull.base_branch, pull.head_sha) == (7, BASE, "main", HEAD)
    assert pull.url == "https://github.com/octo/app/pull/7"
    assert gh.pull("octo/app", 8) is None
    assert gh.pull_for_commit("octo/app", "c" * 40) is None

    diff = gh.compare("octo/app", BASE, HEAD)
    assert [(f.path, f.status, f.patch) for f in diff.files] == [
        ("src/pkg/mod.py", "modified", PATCH),
        ("big.bin", "added", None),
        ("pkg/__init__.py", "added", None),
    ]
    # GitHub's changes tell the too large file from the empty one
    assert [f.changes for f in diff.files][1:] == [124, 0]
    assert not diff.truncated
    assert gh.file_contents("octo/app", "src/pkg/mod.py", HEAD) == b"a = 1\nb = 2\nc = 3\n"
    assert gh.file_contents("octo/app", "missing.py", HEAD) is None

    gh.set_status(
        "octo/app",
        HEAD,
        Status("codecov/patch", "success", "61.11% of diff hit (target 74.29%)", "http://cov/x"),
    )
    assert fake.state.statuses[("octo/app", HEAD)] == [
        {
            "state": "success",
            "description": "61.11% of diff hit (target 74.29%)",
            "context": "codecov/patch",
            "target_url": "http://cov/x",
        }
    ]
    comment_written_edited_and_deleted(gh, fake, "octo/app", 7)
    assert proxy.warnings() == []


def test_a_comment_deleted_on_github_is_reported_gone_not_raised(
    github: tuple[FakeGitHub, PrismProxy],
) -> None:
    _fake, proxy = github
    assert client(proxy).update_comment("octo/app", 7, 3_999_999_999, "body") is False
    # GitHub answers 404 for a deleted comment; its description lists only 200 and 422.
    assert len(proxy.warnings()) == 1
    assert "Unable to match the returned status code" in proxy.warnings()[0]


def test_a_repository_without_access_raises_access_denied_with_the_status(
    github: tuple[FakeGitHub, PrismProxy],
) -> None:
    fake, proxy = github
    fake.state.forbidden.add("octo/private")
    with pytest.raises(AccessDenied) as raised:
        client(proxy).compare("octo/private", BASE, HEAD)
    assert raised.value.status_code == 404
    assert "octo/private" in str(raised.value)


def app_key() -> tuple[str, str]:
    """A new key of a GitHub App: its private PEM (the app signs with it) and
    its public PEM (GitHub checks the app's tokens with it)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    public_pem = (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    return private_pem, public_pem


def app_client(fake: FakeGitHub, proxy: PrismProxy) -> GitHub:
    """A client signing as GitHub App 12345 with a new key the fake knows."""
    private_pem, public_pem = app_key()
    fake.state.app = ("12345", public_pem)
    return client(proxy, AppAuth("12345", private_pem))


def test_a_github_app_gets_one_installation_token_per_repository_and_reuses_it(
    github: tuple[FakeGitHub, PrismProxy],
) -> None:
    fake, proxy = github
    fake.add_pull("octo/app", FakePull(7, BASE, "main", HEAD, "feature"))
    gh = app_client(fake, proxy)

    for _ in range(3):
        assert gh.pull("octo/app", 7) is not None
    assert fake.state.installation_tokens == 1
    assert len(fake.calls("GET", "/installation")) == 1
    # The repository calls carry the installation token, not the App's JWT.
    assert len(fake.calls("GET", "/pulls/7")) == 3


def test_an_installation_token_about_to_expire_is_renewed_before_use(
    github: tuple[FakeGitHub, PrismProxy],
) -> None:
    fake, proxy = github
    fake.state.installation_token_ttl_s = 120  # inside the 5-minute renewal margin
    fake.add_pull("octo/app", FakePull(7, BASE, "main", HEAD, "feature"))
    gh = app_client(fake, proxy)

    gh.pull("octo/app", 7)
    gh.pull("octo/app", 7)

    assert fake.state.installation_tokens == 2
    assert len(fake.calls("GET", "/installation")) == 1  # the installation id is kept


def test_a_wrong_app_key_is_refused_by_github_as_access_denied(
    github: tuple[FakeGitHub, PrismProxy],
) -> None:
    fake, proxy = github
    signer_pem, _ = app_key()
    _, other_public_pem = app_key()
    fake.state.app = ("12345", other_public_pem)  # GitHub knows another key of the app
    with pytest.raises(AccessDenied) as raised:
        client(proxy, AppAuth("12345", signer_pem)).pull("octo/app", 7)
    assert raised.value.status_code == 401


@pytest.mark.skipif(not CREATE_STATUS.exists(), reason="@octokit/fixtures not installed")
def test_statuses_are_sent_as_githubs_recorded_create_status_exchange(
    github: tuple[FakeGitHub, PrismProxy],
) -> None:
    fake, proxy = github
    recorded = [
        e for e in json.loads(CREATE_STATUS.read_text()) if e["method"] == "post"
    ]  # the scenario's two POST /statuses, answered 201 by the real GitHub
    fake.state.recorded = list(recorded)
    gh = client(proxy)
    for exchange in recorded:
        body = exchange["body"]
        repo = "/".join(exchange["path"].split("/")[2:4])
        sha = exchange["path"].rsplit("/", 1)[1]
        gh.set_status(
            repo,
            sha,
            Status(body["context"], body["state"], body["description"], body["target_url"]),
        )
    assert fake.state.recorded == []
    assert fake.state.mismatches == []


def test_a_comparison_cut_at_300_files_is_read_whole_from_the_pull_requests_file_list(
    github: tuple[FakeGitHub, PrismProxy],
) -> None:
    fake, proxy = github
    fake.add_pull("octo/app", FakePull(7, BASE, "main", HEAD, "feature"))
    files: list[tuple[str, str, str | None]] = [
        (f"src/m{i:03}.py", "modified", PATCH) for i in range(349)
    ]
    files.append(("assets/huge.json", "modified", None))  # GitHub's "too large": no patch
    fake.add_diff("octo/app", BASE, HEAD, files)
    gh = client(proxy)

    cut = gh.compare("octo/app", BASE, HEAD)
    assert len(cut.files) == 300 and cut.truncated

    whole = gh.compare("octo/app", BASE, HEAD, pull=7)
    assert [(f.path, f.status, f.patch) for f in whole.files] == files
    assert not whole.truncated
    pages = [r.query for r in fake.state.requests if r.path == "/repos/octo/app/pulls/7/files"]
    assert pages == [f"per_page=100&page={n}" for n in (1, 2, 3, 4)]
    assert proxy.warnings() == []
