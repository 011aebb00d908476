"""Reading a provider's pull-request event: GitHub's and GitLab's own examples."""

from __future__ import annotations

import json

import pytest

from app.providers.events import EventUnreadable, github_pull_event, gitlab_pull_event
from tests.support.provider_events import EVENTS, gitlab_merge_request_event
from tests.support.provider_events import github_pull_event as github_body

pytestmark = pytest.mark.unit

HEAD, BASE = "a" * 40, "b" * 40


def test_githubs_opened_example_reads_as_its_pull_request() -> None:
    body = json.loads((EVENTS / "github-pull_request-opened.json").read_text())

    event = github_pull_event(body)

    assert event is not None and event.asks_feedback
    assert (event.service, event.repository, event.default_branch) == (
        "github",
        "codertocat/hello-world",  # stored lower case, as repositories are
        "master",
    )
    assert (event.number, event.state, event.base_branch, event.head_branch) == (
        2,
        "open",
        "master",
        "changes",
    )
    assert event.base_sha == body["pull_request"]["base"]["sha"]
    assert event.head_sha == body["pull_request"]["head"]["sha"]


@pytest.mark.parametrize(
    ("action", "changes", "asks"),
    [
        ("synchronize", None, True),
        ("reopened", None, True),
        ("edited", {"title": {"from": "old"}}, False),
        ("edited", {"base": {"ref": {"from": "main"}, "sha": {"from": BASE}}}, True),
    ],
)
def test_an_action_asks_for_feedback_only_when_it_can_change_what_the_pull_shows(
    action: str, changes: dict | None, asks: bool
) -> None:
    body = github_body(
        action, "acme/web", 7, base=("main", BASE), head=("feature", HEAD), changes=changes
    )

    event = github_pull_event(body)

    assert event is not None and event.asks_feedback is asks


def test_other_github_actions_are_not_read() -> None:
    body = json.loads((EVENTS / "github-pull_request-closed.json").read_text())
    assert github_pull_event(body) is None


@pytest.mark.parametrize(
    "spoil",
    [
        lambda b: b["pull_request"]["head"].update(sha="not-a-sha"),
        lambda b: b["pull_request"].update(number=-1),
        lambda b: b["pull_request"].update(number=True),
        lambda b: b["repository"].update(full_name="no-slash"),
        lambda b: b.pop("pull_request"),
        lambda b: b["pull_request"]["base"].update(ref=["main"]),
    ],
    ids=["sha", "negative-number", "boolean-number", "name", "no-pull", "ref-type"],
)
def test_a_field_that_is_not_what_github_documents_is_refused(spoil) -> None:  # type: ignore[no-untyped-def]
    body = github_body("opened", "acme/web", 7, base=("main", BASE), head=("feature", HEAD))
    spoil(body)
    with pytest.raises(EventUnreadable):
        github_pull_event(body)


def test_gitlabs_merge_request_hook_reads_as_its_merge_request() -> None:
    body = json.loads((EVENTS / "gitlab-merge_request-open.json").read_text())

    event = gitlab_pull_event(body)

    assert event is not None and event.asks_feedback
    assert (event.repository, event.number, event.state) == ("gitlabhq/gitlab-test", 1, "open")
    assert (event.base_branch, event.base_sha, event.head_branch) == ("master", None, "ms-viewport")
    assert event.head_sha == "da1560886d4f094c3e6c9ef40349f7d38b5d27d7"


@pytest.mark.parametrize(
    ("action", "extra", "asks"),
    [
        ("update", {}, False),
        ("update", {"oldrev": "c" * 40}, True),
        ("update", {"changes": {"target_branch": {"previous": "main", "current": "dev"}}}, True),
        ("reopen", {}, True),
    ],
)
def test_a_gitlab_update_asks_for_feedback_only_with_a_new_head_or_target(
    action: str, extra: dict, asks: bool
) -> None:
    body = gitlab_merge_request_event(
        action, "g/p", 3, target_branch="main", source_branch="f", head_sha=HEAD, **extra
    )

    event = gitlab_pull_event(body)

    assert event is not None and event.asks_feedback is asks


def test_other_gitlab_hooks_and_actions_are_not_read() -> None:
    body = gitlab_merge_request_event(
        "merge", "g/p", 3, target_branch="main", source_branch="f", head_sha=HEAD
    )
    assert gitlab_pull_event(body) is None
    assert gitlab_pull_event({"object_kind": "push"}) is None


@pytest.mark.parametrize("private", [True, False])
def test_a_github_event_says_whether_the_repository_is_private(private: bool) -> None:
    body = github_body("opened", "acme/web", 7, base=("main", "a" * 40), head=("f", "b" * 40))
    body["repository"]["private"] = private

    event = github_pull_event(body)

    assert event is not None and event.private is private


@pytest.mark.parametrize(("level", "private"), [(0, True), (10, True), (20, False), ("20", None)])
def test_a_gitlab_event_says_whether_the_project_is_private(
    level: object, private: bool | None
) -> None:
    body = gitlab_merge_request_event(
        "open", "g/p", 3, target_branch="main", source_branch="f", head_sha="c" * 40
    )
    body["project"]["visibility_level"] = level

    event = gitlab_pull_event(body)

    assert event is not None and event.private is private
