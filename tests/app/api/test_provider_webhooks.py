"""POST /webhooks/github and /webhooks/gitlab through the serve app.

The embedded pipeline (fakeredis, SQLite, the in-process worker) serves the
app; the end-to-end case talks to the fake GitHub behind Prism, so the
worker's provider calls are checked against GitHub's description. The
events are GitHub's and GitLab's own examples.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from app.api import create_app
from app.db.models import Pull, PullDelivery, Repository
from app.embedded import EmbeddedRuntime
from tests.app.api.conftest import add_repo, api_runtime, auth, v1_payload
from tests.support.fake_github import GITHUB_SPEC, FakeGitHub, FakePull, needs_prism, prism_proxy
from tests.support.provider_events import (
    EVENTS,
    github_headers,
    github_pull_event,
    gitlab_headers,
    gitlab_merge_request_event,
)

pytestmark = pytest.mark.timeout(120)

SECRET, TOKEN = "gh-hook-secret", "gl-hook-token"
REPO, HEAD, BASE = "acme/web", "a" * 40, "b" * 40


def pull_event(repo: str = REPO, action: str = "opened") -> bytes:
    body = github_pull_event(action, repo, 7, base=("main", BASE), head=("feature", HEAD))
    return json.dumps(body).encode()


def pulls(runtime: EmbeddedRuntime) -> list[tuple[int, str | None]]:
    with runtime.app.services.sessions() as session:
        return [tuple(r) for r in session.execute(sa.select(Pull.number, Pull.head_sha))]  # type: ignore[misc]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[EmbeddedRuntime, TestClient]]:
    settings = {"github_webhook_secret": SECRET, "gitlab_webhook_secret": TOKEN}
    with (
        api_runtime(tmp_path, **settings) as runtime,
        TestClient(create_app(covworker=runtime.app)) as client,
    ):
        add_repo(runtime, REPO)
        add_repo(runtime, "group/sub/proj", "gitlab")
        yield runtime, client


def test_without_its_secret_each_route_refuses_and_says_which_setting_is_missing(
    client: TestClient, runtime: EmbeddedRuntime
) -> None:
    body = pull_event()
    github = client.post("/webhooks/github", content=body, headers=github_headers(body, "x"))
    gitlab = client.post("/webhooks/gitlab", content=b"{}", headers=gitlab_headers("x"))

    assert (
        github.status_code == 403 and "COVWORKER_GITHUB_WEBHOOK_SECRET" in github.json()["detail"]
    )
    assert (
        gitlab.status_code == 403 and "COVWORKER_GITLAB_WEBHOOK_SECRET" in gitlab.json()["detail"]
    )
    assert pulls(runtime) == []


@pytest.mark.parametrize(
    "signature",
    ["wrong", "", "sha256=" + "0" * 64, None],
    ids=["garbage", "empty", "another-body", "missing"],
)
def test_a_bad_signature_is_refused_401_and_nothing_is_stored(
    served: tuple[EmbeddedRuntime, TestClient], signature: str | None
) -> None:
    runtime, client = served
    body = pull_event()
    headers = github_headers(body, SECRET)
    if signature is None:
        del headers["X-Hub-Signature-256"]
    else:
        headers["X-Hub-Signature-256"] = signature
    signed_otherwise = github_headers(body, "another secret")

    refused = client.post("/webhooks/github", content=body, headers=headers)
    other = client.post("/webhooks/github", content=body, headers=signed_otherwise)

    assert refused.status_code == other.status_code == 401
    assert "X-Hub-Signature-256" in refused.json()["detail"]
    assert pulls(runtime) == []


def test_a_gitlab_event_with_a_wrong_token_is_refused_401_and_nothing_is_stored(
    served: tuple[EmbeddedRuntime, TestClient],
) -> None:
    runtime, client = served
    body = gitlab_merge_request_event(
        "open", "group/sub/proj", 3, target_branch="main", source_branch="f", head_sha=HEAD
    )

    refused = client.post("/webhooks/gitlab", json=body, headers=gitlab_headers("wrong"))
    stored = client.post("/webhooks/gitlab", json=body, headers=gitlab_headers(TOKEN))

    assert refused.status_code == 401
    assert stored.status_code == 200, stored.text
    assert pulls(runtime) == [(3, HEAD)]


def test_ping_is_answered_and_other_events_and_actions_are_ignored_202(
    served: tuple[EmbeddedRuntime, TestClient],
) -> None:
    runtime, client = served
    ping = (EVENTS / "github-ping.json").read_bytes()
    closed = pull_event(action="closed")

    pong = client.post(
        "/webhooks/github", content=ping, headers=github_headers(ping, SECRET, "ping")
    )
    push = client.post(
        "/webhooks/github", content=ping, headers=github_headers(ping, SECRET, "push")
    )
    shut = client.post("/webhooks/github", content=closed, headers=github_headers(closed, SECRET))
    note = client.post("/webhooks/gitlab", json={}, headers=gitlab_headers(TOKEN, "Note Hook"))

    assert pong.status_code == 200 and pong.json() == {"detail": "pong"}
    assert push.status_code == shut.status_code == note.status_code == 202
    assert "'push'" in push.json()["detail"]
    assert pulls(runtime) == []


def test_an_event_for_an_unknown_repository_is_404_and_stores_nothing(
    served: tuple[EmbeddedRuntime, TestClient],
) -> None:
    runtime, client = served
    body = pull_event("someone/else")

    answer = client.post("/webhooks/github", content=body, headers=github_headers(body, SECRET))

    assert answer.status_code == 404 and "someone/else" in answer.json()["detail"]
    assert pulls(runtime) == []


@pytest.mark.parametrize(
    "body",
    [b"{not json", b"[1, 2]", json.dumps({"action": "opened", "pull_request": {}}).encode()],
    ids=["not-json", "not-an-object", "no-fields"],
)
def test_a_signed_event_that_does_not_read_is_400_and_stores_nothing(
    served: tuple[EmbeddedRuntime, TestClient], body: bytes
) -> None:
    runtime, client = served

    answer = client.post("/webhooks/github", content=body, headers=github_headers(body, SECRET))

    assert answer.status_code == 400, answer.text
    assert pulls(runtime) == []


def test_an_event_body_over_its_limit_is_refused_413_while_it_streams(tmp_path: Path) -> None:
    settings = {"github_webhook_secret": SECRET, "max_provider_event_bytes": 50_000}
    with (
        api_runtime(tmp_path, **settings) as runtime,
        TestClient(create_app(covworker=runtime.app)) as client,
    ):
        add_repo(runtime, REPO)
        body = pull_event()
        assert 20_000 < len(body) < 50_000  # GitHub's example is under the limit
        big = body + b" " * 50_000

        def chunks() -> Iterator[bytes]:  # no Content-Length: cut while it streams
            yield from (big[i : i + 8192] for i in range(0, len(big), 8192))

        headers = github_headers(big, SECRET)
        refused = client.post("/webhooks/github", content=chunks(), headers=headers)
        accepted = client.post(
            "/webhooks/github", content=body, headers=github_headers(body, SECRET)
        )

    assert refused.status_code == 413
    assert "COVWORKER_MAX_PROVIDER_EVENT_BYTES" in refused.json()["detail"]
    assert accepted.status_code == 200


def wait_for(condition: Callable[[], bool], timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting for a condition"
        time.sleep(0.05)


@needs_prism
def test_a_pull_opened_after_its_head_settled_gets_its_comment_once_through_the_worker(
    tmp_path: Path,
) -> None:
    with (
        FakeGitHub() as fake,
        prism_proxy(GITHUB_SPEC, fake.url, tmp_path / "prism.log") as proxy,
        api_runtime(
            tmp_path,
            github_webhook_secret=SECRET,
            github_token="ghp_test",
            github_api_url=proxy.url,
        ) as runtime,
        TestClient(create_app(covworker=runtime.app)) as client,
    ):
        token = add_repo(runtime, REPO)
        report = b"SF:src/a.py\nDA:1,1\nDA:2,1\nDA:3,0\nend_of_record\n"
        for sha, branch in ((BASE, "main"), (HEAD, "feature")):
            created = client.post(
                "/upload/github/acme::::web/upload-coverage",
                json={"commitid": sha, "branch": branch, "code": "default"},
                headers=auth(token),
            )
            assert created.status_code == 201, created.text
            location = created.json()["raw_upload_location"]
            path = location.split("://", 1)[1].split("/", 1)[1]
            assert client.put("/" + path, content=v1_payload(("a.info", report))).status_code == 200
            runtime.wait_settled()
        fake.add_pull(REPO, FakePull(7, BASE, "main", HEAD, "feature"))
        fake.add_diff(REPO, BASE, HEAD, [("src/a.py", "modified", "@@ -1 +1,3 @@\n+x\n+y\n z\n")])
        body = pull_event()

        first = client.post("/webhooks/github", content=body, headers=github_headers(body, SECRET))
        wait_for(lambda: len(fake.comments_on(REPO, 7)) == 1)
        runtime.wait_settled()
        writes = len(fake.calls("POST")) + len(fake.calls("PATCH"))
        again = client.post("/webhooks/github", content=body, headers=github_headers(body, SECRET))
        runtime.wait_settled()

        assert first.status_code == again.status_code == 200
        assert "on its way" in first.json()["detail"] and "asked already" in again.json()["detail"]
        assert len(fake.comments_on(REPO, 7)) == 1
        assert len(fake.calls("POST")) + len(fake.calls("PATCH")) == writes
        head_statuses = [s for s in fake.state.statuses[(REPO, HEAD)] if s["state"] != "pending"]
        assert {s["context"] for s in head_statuses} == {"codecov/project", "codecov/patch"}
        with runtime.app.services.sessions() as session:
            repo = session.scalars(sa.select(Repository).where(Repository.name == REPO)).one()
            assert (repo.default_branch, repo.default_branch_source) == ("main", "provider")
            assert (
                session.scalar(
                    sa.select(sa.func.count())
                    .select_from(PullDelivery)
                    .where(PullDelivery.state == "failed")
                )
                == 0
            )
    assert proxy.violations() == []
