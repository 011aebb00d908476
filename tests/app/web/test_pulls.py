"""The repository's pull requests page and its JSON, on the embedded
pipeline: the pulls and the outbox rows are what feedback writes."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from app.db.models import Commit, Pull, PullDelivery, Repository
from app.embedded import EmbeddedRuntime
from app.web.pullpages import provider_link
from tests.app.web.conftest import Upload, lcov

pytestmark = pytest.mark.timeout(60)

BASE, HEAD = "1" * 40, "2" * 40


@pytest.fixture
def pull(runtime: EmbeddedRuntime, upload: Upload) -> None:
    upload("acme/web", BASE, {"a.info": lcov("a.py", {1: 1, 2: 0})}, branch="main")
    upload("acme/web", HEAD, {"a.info": lcov("a.py", {1: 1, 2: 1, 3: 0, 4: 1})}, branch="fix")
    with runtime.app.services.sessions.begin() as session:
        repo_id = session.scalar(sa.select(Repository.id).where(Repository.name == "acme/web"))
        head_id = session.scalar(sa.select(Commit.id).where(Commit.sha == HEAD))
        session.add(
            Pull(
                repository_id=repo_id,
                number=7,
                title="<script>alert(1)</script> fix",
                url="https://github.com/acme/web/pull/7",
                base_branch="main",
                base_sha=BASE,
                head_branch="fix",
                head_sha=HEAD,
                updated_at=datetime(2026, 3, 1, 12, tzinfo=UTC),
            )
        )
        session.add(
            Pull(
                repository_id=repo_id,
                number=8,
                url="javascript:alert(1)",
                head_sha="9" * 40,
                updated_at=datetime(2026, 2, 1, tzinfo=UTC),
            )
        )
        prepare = {"pull": {"number": 7}, "patch": 66.66667, "base": BASE}
        session.add(
            PullDelivery(
                commit_id=head_id, report_version=1, target="prepare", payload=prepare, state="sent"
            )
        )
        for context, state, delivery in (
            ("codecov/project", "success", "sent"),
            ("codecov/patch", "failure", "pending"),
        ):
            session.add(
                PullDelivery(
                    commit_id=head_id,
                    report_version=1,
                    target=f"status:{context}",
                    payload={"context": context, "state": state, "description": "d"},
                    state=delivery,
                )
            )


def test_the_json_lists_each_pull_request_with_its_head_patch_change_and_statuses(
    client: TestClient, pull: None
) -> None:
    data = client.get("/api/v1/repos/acme/web/pulls").json()
    assert [p["number"] for p in data["pulls"]] == [7, 8]
    seven = data["pulls"][0]
    assert seven["head"] == HEAD and seven["head_known"]
    assert seven["patch"] == 66.66667
    assert seven["base_commit"] == BASE  # the pull's base commit, by the one base rule
    assert seven["coverage"] == 75.0 and seven["change"] == 25.0
    assert [(s["context"], s["state"], s["delivery"]) for s in seven["statuses"]] == [
        ("codecov/patch", "failure", "pending"),
        ("codecov/project", "success", "sent"),
    ]
    assert seven["url"] == "https://github.com/acme/web/pull/7"
    assert seven["updated_at"].startswith("2026-03-01T12:00:00")
    eight = data["pulls"][1]
    assert eight["url"] is None and not eight["head_known"] and eight["statuses"] == []


def test_the_page_links_the_provider_and_the_head_and_escapes_the_title(
    client: TestClient, pull: None
) -> None:
    html = client.get("/acme/web/pulls").text
    assert 'href="https://github.com/acme/web/pull/7"' in html
    assert f'href="/acme/web/commit/{HEAD}"' in html
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt; fix" in html
    assert "javascript:" not in html
    assert "66.66%" in html and "+25.00%" in html


def test_a_link_that_is_not_a_web_address_is_not_a_link() -> None:
    assert provider_link("JavaScript:alert(1)") is None
    assert provider_link("data:text/html,x") is None
    assert provider_link("https://gitlab.com/a/b/-/merge_requests/1") is not None


def test_a_repository_without_pull_requests_says_so(client: TestClient, upload: Upload) -> None:
    upload("acme/web", BASE, {"a.info": lcov("a.py", {1: 1})})
    assert client.get("/api/v1/repos/acme/web/pulls").json()["pulls"] == []
    assert "No pull request yet" in client.get("/acme/web/pulls").text
    assert client.get("/acme/nothing/pulls").status_code == 404
