"""The GitLab client against a fake GitLab behind Prism (openapi/gitlab.yaml).

Projects in subgroups are named by their full path, URL-encoded as one
segment; Prism checks every request and answer against the description
written from GitLab's API documentation.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from app.providers import AccessDenied, Status
from app.providers.gitlab import GitLab, project_id
from app.providers.http import ProviderHttp
from tests.support.fake_github import FakePull, PrismProxy, needs_prism, prism_proxy
from tests.support.fake_gitlab import GITLAB_SPEC, FakeGitLab
from tests.support.providers import comment_written_edited_and_deleted

pytestmark = needs_prism

PROJECT = "acme/platform/calc"  # a project in a subgroup
BASE, HEAD = "a" * 40, "b" * 40
PATCH = "@@ -1,2 +1,3 @@\n a = 1\n+b = 2\n c = 3\n"


@pytest.fixture
def gitlab(tmp_path: Path) -> Iterator[tuple[FakeGitLab, PrismProxy]]:
    """The fake GitLab behind Prism; a call its OpenAPI description refuses fails the test."""
    with FakeGitLab() as fake, prism_proxy(GITLAB_SPEC, fake.url, tmp_path / "prism.log") as p:
        yield fake, p
        assert p.violations() == []


def client(proxy: PrismProxy) -> GitLab:
    return GitLab(ProviderHttp(proxy.url, timeout_s=10), "glpat-test")


def test_a_subgroup_project_is_one_url_encoded_segment() -> None:
    assert project_id("acme/platform/calc") == "acme%2Fplatform%2Fcalc"


def test_every_call_covworker_makes_is_valid_gitlab_api_both_ways(
    gitlab: tuple[FakeGitLab, PrismProxy],
) -> None:
    fake, proxy = gitlab
    fake.add_pull(PROJECT, FakePull(7, BASE, "main", HEAD, "feature"))
    fake.add_diff(
        PROJECT,
        BASE,
        HEAD,
        [
            ("src/calc/mod.py", "modified", PATCH),
            ("big.csv", "added", None),
            ("calc/__init__.py", "added", ""),  # empty: GitLab's diff is ""
        ],
    )
    fake.add_file(PROJECT, HEAD, "src/calc/mod.py", b"a = 1\nb = 2\nc = 3\n")
    gl = client(proxy)

    pull = gl.pull_for_commit(PROJECT, HEAD)
    assert pull is not None and pull == gl.pull(PROJECT, 7)
    assert (pull.number, pull.base_sha, pull.base_branch, pull.head_sha, pull.state) == (
        7,
        BASE,
        "main",
        HEAD,
        "open",
    )
    assert pull.url == f"https://gitlab.example/{PROJECT}/-/merge_requests/7"
    assert gl.pull(PROJECT, 8) is None
    diff = gl.compare(PROJECT, BASE, HEAD)
    assert [(f.path, f.status, f.patch) for f in diff.files] == [
        ("src/calc/mod.py", "modified", PATCH),
        ("big.csv", "added", None),  # too_large: left out
        ("calc/__init__.py", "added", ""),  # nothing to leave out
    ]
    assert gl.file_contents(PROJECT, "src/calc/mod.py", HEAD) == b"a = 1\nb = 2\nc = 3\n"
    assert gl.file_contents(PROJECT, "nope.py", HEAD) is None

    gl.set_status(
        PROJECT, HEAD, Status("codecov/patch", "failure", "50.00% of diff hit", "http://c/x")
    )
    assert fake.state.statuses[(PROJECT, HEAD)] == [
        {
            "state": "failed",  # GitLab's word for failure and error
            "name": "codecov/patch",
            "description": "50.00% of diff hit",
            "target_url": "http://c/x",
        }
    ]
    note = comment_written_edited_and_deleted(gl, fake, PROJECT, 7)
    assert gl.update_comment(PROJECT, 7, note, "gone") is False
    assert proxy.warnings() == []


def test_a_project_the_token_cannot_see_raises_access_denied(
    gitlab: tuple[FakeGitLab, PrismProxy],
) -> None:
    fake, proxy = gitlab
    fake.state.forbidden.add(PROJECT)
    with pytest.raises(AccessDenied) as raised:
        client(proxy).compare(PROJECT, BASE, HEAD)
    assert raised.value.status_code == 404
