"""RestProvider makes each call once for both providers: below the repository's
path, with its credentials, and with the provider's own names for what differs.

The providers' real wire format is checked against their OpenAPI
descriptions through Prism (``test_github.py``, ``test_gitlab.py``); here a
provider that names its paths plainly shows what the base class itself adds.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from app.providers.base import ProviderRejected, RepositoryFacts, Status
from app.providers.http import ProviderHttp
from app.providers.rest import RestProvider, Route, branch_of, quote_path


class PlainProvider(RestProvider):
    comment_update_method = "PUT"

    def _route(self, repo: str) -> Route:
        return Route(f"/r/{repo}", {"Authorization": "Bearer t", "Accept": "json"}, "t")

    def _status_body(self, status: Status) -> dict[str, str]:
        return {"name": status.context, "state": status.state}

    def _comments_path(self, number: int) -> str:
        return f"/pulls/{number}/notes"

    def _comment_path(self, number: int, comment_id: int) -> str:
        return f"/pulls/{number}/notes/{comment_id}"

    def _facts(self, payload: dict[str, Any]) -> RepositoryFacts:
        return RepositoryFacts(branch_of(payload), bool(payload.get("private")), True)


def recorded(status: int = 200, body: object = None) -> tuple[PlainProvider, list[httpx.Request]]:
    """A provider whose calls are answered ``status`` and recorded."""
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(status, json=body if body is not None else {})

    http = ProviderHttp("https://api.example", timeout_s=1, transport=httpx.MockTransport(answer))
    return PlainProvider(http), seen


def test_a_status_goes_below_the_repository_with_its_credentials_and_a_link_only_when_given() -> (
    None
):
    provider, seen = recorded()
    provider.set_status("o/r", "abc", Status("codecov/project", "success", "80%"))
    provider.set_status("o/r", "abc", Status("codecov/patch", "failure", "0%", "https://c/x"))
    assert [(r.method, r.url.path) for r in seen] == [("POST", "/r/o/r/statuses/abc")] * 2
    assert seen[0].headers["authorization"] == "Bearer t"
    assert json.loads(seen[0].content) == {"name": "codecov/project", "state": "success"}
    assert json.loads(seen[1].content) == {
        "name": "codecov/patch",
        "state": "failure",
        "target_url": "https://c/x",
    }


def test_a_comment_is_created_edited_with_the_providers_method_and_deleted_under_its_paths() -> (
    None
):
    provider, seen = recorded(body={"id": 42})
    assert provider.create_comment("o/r", 7, "hello") == 42
    assert provider.update_comment("o/r", 7, 42, "again") is True
    provider.delete_comment("o/r", 7, 42)
    assert [(r.method, r.url.path) for r in seen] == [
        ("POST", "/r/o/r/pulls/7/notes"),
        ("PUT", "/r/o/r/pulls/7/notes/42"),
        ("DELETE", "/r/o/r/pulls/7/notes/42"),
    ]
    assert [json.loads(r.content) for r in seen[:2]] == [{"body": "hello"}, {"body": "again"}]


def test_editing_or_deleting_a_comment_that_is_gone_is_not_an_error() -> None:
    provider, seen = recorded(status=404)
    assert provider.update_comment("o/r", 7, 42, "again") is False
    provider.delete_comment("o/r", 7, 42)
    assert len(seen) == 2


@pytest.mark.parametrize(("accept", "sent"), [(None, "json"), ("raw", "raw")])
def test_a_call_keeps_the_usual_accept_header_unless_it_names_another(
    accept: str | None, sent: str
) -> None:
    provider, seen = recorded()
    provider._call("GET", "/contents/x", "o/r", "file", accept=accept)
    assert seen[0].headers["accept"] == sent
    assert seen[0].headers["authorization"] == "Bearer t"


@pytest.mark.parametrize(
    "path",
    [
        "../../../victim/private/contents/secret.py",
        "src/../../../victim/private",
        "%2e%2e/%2E%2E/victim",
        "..%2F..%2Fvictim%2Fprivate",
        "a/./b",
        "..\\..\\victim",
    ],
)
def test_a_path_that_could_climb_out_of_the_repository_is_refused_before_any_request(
    path: str,
) -> None:
    provider, seen = recorded()
    with pytest.raises(ProviderRejected, match="leaves the repository"):
        provider._call("GET", f"/contents/{path}", "o/r", "contents")
    assert seen == []


def test_a_file_path_is_sent_as_whole_segments_so_no_name_reads_as_a_separator() -> None:
    assert quote_path("src/a b/100%.py") == "src/a%20b/100%25.py"
    assert quote_path("src/a?b#c.py") == "src/a%3Fb%23c.py"


@pytest.mark.parametrize("path", ["a//b.py", "a/./b.py", "a/../b.py", "../b.py", "a/", ""])
def test_a_file_path_with_an_empty_or_dot_segment_is_refused_whole(path: str) -> None:
    with pytest.raises(ProviderRejected, match="not a file path"):
        quote_path(path)


@pytest.mark.parametrize("service", ["github", "gitlab"])
@pytest.mark.parametrize("path", ["../../../victim/private/contents/secret.py", "a//b.py"])
def test_neither_provider_asks_for_a_file_whose_path_could_leave_the_repository(
    service: str, path: str
) -> None:
    from app.providers.github import GitHub, TokenAuth
    from app.providers.gitlab import GitLab

    seen: list[httpx.Request] = []
    transport = httpx.MockTransport(lambda r: seen.append(r) or httpx.Response(404, json={}))
    http = ProviderHttp("https://api.example", timeout_s=1, transport=transport)
    provider = GitHub(http, TokenAuth("t")) if service == "github" else GitLab(http, "t")
    with pytest.raises(ProviderRejected):
        provider.file_contents("acme/web", path, "abc")
    assert seen == []
