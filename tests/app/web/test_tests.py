"""Where test results show (app/web/tests.py): a commit's tests as JSON
with the comment's section, a repository's slowest and flakiest tests, and
the same 404 as an unknown repository for what the reader may not see."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from fastapi import FastAPI
from fastapi.testclient import TestClient

from app.db.models import Commit, Repository
from app.ingest.store import CommitMeta, upsert_commit
from app.testresults.summary import commit_tests
from app.web.access import make_private
from app.web.tests import commit_tests_data
from app.web.tests import tests_pages_router as routes  # "test..." is not a test
from tests.support.pipeline import Pipeline
from tests.support.testresults import commit_id, junit, payload, repository, settle, upload_tests

pytestmark = pytest.mark.timeout(120)

SHA = "a" * 40
TESTS_URL = f"/api/v1/repos/acme/web/commits/{SHA}/tests"


@pytest.fixture
def web(pipeline: Pipeline) -> Iterator[TestClient]:
    """The test-results routes alone, reading the pipeline's database."""
    api = FastAPI()
    api.include_router(routes(lambda request: pipeline.services))
    with TestClient(api) as client:
        yield client


def test_a_commits_tests_answer_totals_failures_and_the_comment_section(
    pipeline: Pipeline, web: TestClient
) -> None:
    up = upload_tests(pipeline, payload(junit(("test_adds", "passed"), ("test_div", "failed"))))
    settle(pipeline, up)
    reply = web.get(TESTS_URL)
    assert reply.status_code == 200 and reply.headers["cache-control"] == "private, no-store"
    got = reply.json()
    assert (got["repository"], got["commit"], got["uploads"]) == ("acme/web", SHA, 1)
    assert got["totals"] == {
        "passed": 1, "failed": 1, "errored": 0, "skipped": 0, "flaky": 0, "total": 2,
    }  # fmt: skip
    assert [f["name"] for f in got["failures"]] == ["test_div"]
    assert got["comment"].startswith("### :x: 1 Tests Failed:")
    abbreviated = web.get(f"/api/v1/repos/acme/web/commits/{SHA[:10]}/tests")
    assert abbreviated.json()["commit"] == SHA


def test_tests_of_a_private_repository_are_hidden_like_its_pages(
    pipeline: Pipeline, web: TestClient
) -> None:
    up = upload_tests(pipeline, payload(junit(("test_adds", "passed"))))
    settle(pipeline, up)
    assert web.get(TESTS_URL).status_code == 200
    with pipeline.services.sessions.begin() as session:
        token = make_private(session, "acme/web")
    urls = (TESTS_URL, "/api/v1/tests/acme/web", "/-/tests/acme/web")
    for url in urls:
        assert web.get(url).status_code == 404  # as for an unknown repository
        assert web.get(url, headers={"Authorization": f"Bearer {token}"}).status_code == 200
    assert web.get(f"/api/v1/repos/acme/web/commits/{'b' * 40}/tests").status_code == 404
    assert web.get("/-/tests/acme/nope").status_code == 404


def test_a_commit_without_test_results_is_404_and_none_on_the_commit_page(
    pipeline: Pipeline, web: TestClient
) -> None:
    repository(pipeline)
    with pipeline.services.sessions.begin() as session:
        repo = session.scalars(sa.select(Repository)).one()
        upsert_commit(session, repo, SHA, CommitMeta(branch="main"))
    reply = web.get(TESTS_URL)
    assert reply.status_code == 404 and reply.json() == {"detail": "not found"}
    with pipeline.services.sessions() as session:
        repo = session.scalars(sa.select(Repository)).one()
        commit = session.scalars(sa.select(Commit)).one()
        assert commit_tests_data(pipeline.services, session, repo, commit) is None


def test_the_commit_page_shows_the_same_results_as_the_json(pipeline: Pipeline) -> None:
    up = upload_tests(pipeline, payload(junit(("test_a", "failed"), ("test_b", "skipped"))))
    settle(pipeline, up)
    found = commit_id(pipeline, SHA)
    with pipeline.services.sessions() as session:
        repo = session.scalars(sa.select(Repository)).one()
        commit = session.get_one(Commit, found)
        shown = commit_tests_data(pipeline.services, session, repo, commit)
        tests = commit_tests(session, repo.id, commit.id)
    assert tests is not None and shown == tests.as_json()
    assert shown["totals"]["failed"] == 1 and shown["totals"]["skipped"] == 1


def test_the_repository_page_lists_the_slowest_tests_with_their_names_escaped(
    pipeline: Pipeline, web: TestClient
) -> None:
    evil = "<script>alert(1)</script>"
    up = upload_tests(pipeline, payload(junit((evil, "passed"), ("test_b", "failed"))))
    settle(pipeline, up)
    data = web.get("/api/v1/tests/acme/web").json()
    assert data["repository"] == "acme/web" and data["days"] == 90
    assert {t["name"] for t in data["slowest"]} == {evil, "test_b"}
    page = web.get("/-/tests/acme/web")
    assert page.status_code == 200 and page.headers["cache-control"] == "private, no-store"
    assert evil not in page.text and "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text
    missing = web.get("/-/tests/acme/nope")
    assert missing.headers["content-type"].startswith("text/html")
