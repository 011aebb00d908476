"""Coverage over time: the repository page's chart and its JSON, on the
embedded pipeline (fakeredis + SQLite)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from app.db.models import Commit, Upload, UploadState
from app.embedded import EmbeddedRuntime
from tests.app.web.conftest import Upload as UploadFn
from tests.app.web.conftest import lcov

pytestmark = pytest.mark.timeout(60)

SHAS = [f"{i:x}" * 40 for i in range(1, 5)]


def dated(runtime: EmbeddedRuntime, sha: str, days: int) -> None:
    """The commit as uploaded ``days`` after 2026-01-01 (the series' order)."""
    with runtime.app.services.sessions.begin() as session:
        session.execute(
            sa.update(Commit)
            .where(Commit.sha == sha)
            .values(created_at=datetime(2026, 1, 1, tzinfo=UTC) + timedelta(days=days))
        )


@pytest.fixture
def history(runtime: EmbeddedRuntime, upload: UploadFn) -> None:
    """Three commits on main (50%, 75%, 100% overall; flag unit on two of
    them), one on a feature branch."""
    upload(
        "acme/web", SHAS[0], {"a.info": lcov("a.py", {1: 1, 2: 0})}, flags=("unit",), branch="main"
    )
    upload("acme/web", SHAS[1], {"a.info": lcov("a.py", {1: 1, 2: 1, 3: 1, 4: 0})}, branch="main")
    upload("acme/web", SHAS[2], {"a.info": lcov("a.py", {1: 1})}, flags=("unit",), branch="main")
    upload("acme/web", SHAS[3], {"a.info": lcov("a.py", {1: 0})}, branch="feature")
    for days, sha in enumerate(SHAS):
        dated(runtime, sha, days)


def test_the_json_lists_each_settled_commit_of_the_default_branch_oldest_first(
    client: TestClient, history: None
) -> None:
    data = client.get("/api/v1/repos/acme/web/coverage").json()
    assert data["branch"] == "main"
    assert data["flags"] == ["unit"]
    assert [(p["commit"], p["coverage"]) for p in data["points"]] == [
        (SHAS[0], 50.0),
        (SHAS[1], 75.0),
        (SHAS[2], 100.0),
    ]
    assert data["points"][0]["at"].startswith("2026-01-01")


def test_a_flag_and_a_branch_choose_the_series(client: TestClient, history: None) -> None:
    flag = client.get("/api/v1/repos/acme/web/coverage?flag=unit").json()
    assert [(p["commit"], p["coverage"]) for p in flag["points"]] == [
        (SHAS[0], 50.0),
        (SHAS[2], 100.0),
    ]
    feature = client.get("/api/v1/repos/acme/web/coverage?branch=feature").json()
    assert [(p["commit"], p["coverage"]) for p in feature["points"]] == [(SHAS[3], 0.0)]
    assert (
        client.get("/api/v1/repos/acme/web/coverage?limit=1").json()["points"][0]["commit"]
        == SHAS[2]
    )


def test_a_commit_with_uploads_in_flight_is_not_a_point(
    runtime: EmbeddedRuntime, client: TestClient, history: None
) -> None:
    with runtime.app.services.sessions.begin() as session:
        commit_id = session.scalar(sa.select(Commit.id).where(Commit.sha == SHAS[2]))
        session.add(Upload(commit_id=commit_id, state=UploadState.UPLOADED, raw=b""))
    points = client.get("/api/v1/repos/acme/web/coverage").json()["points"]
    assert [p["commit"] for p in points] == SHAS[:2]


def test_the_repository_page_draws_the_chart_with_a_link_per_point(
    client: TestClient, history: None
) -> None:
    html = client.get("/acme/web").text
    chart = html[html.index('<svg xmlns="http://www.w3.org/2000/svg" class="chart"') :]
    chart = chart[: chart.index("</svg>")]
    links = re.findall(r'<a href="/acme/web/commit/([0-9a-f]{40})"', chart)
    assert links == SHAS[:3]
    assert 'href="/api/v1/repos/acme/web/coverage?branch=main"' in html
    assert 'href="/-/tests/acme/web"' in html and 'href="/acme/web/pulls"' in html
    flagged = client.get("/acme/web?flag=unit").text
    assert 'aria-current="true"><span class="tag">unit</span>' in flagged
    assert "coverage?branch=main&amp;flag=unit" in flagged


def test_a_branch_name_that_is_markup_is_escaped_in_the_chart_and_the_chooser(
    client: TestClient, upload: UploadFn
) -> None:
    branch = '<b onmouseover="x">'
    upload("acme/web", SHAS[0], {"a.info": lcov("a.py", {1: 1})}, flags=("unit",), branch=branch)
    html = client.get("/acme/web", params={"branch": branch}).text
    assert branch not in html
    assert (
        "&lt;b onmouseover=&#34;x&#34;&gt;" in html or "&lt;b onmouseover=&quot;x&quot;&gt;" in html
    )
    assert f'<a href="/acme/web/commit/{SHAS[0]}"' in html  # the chart's point


def test_a_private_repository_s_series_is_not_found_without_its_token(
    client: TestClient, history: None, runtime: EmbeddedRuntime
) -> None:
    from app.web.access import make_private

    with runtime.app.services.sessions.begin() as session:
        make_private(session, "acme/web")
    assert client.get("/api/v1/repos/acme/web/coverage").status_code == 404


def test_an_overlong_branch_is_a_clear_error(client: TestClient, history: None) -> None:
    reply = client.get("/api/v1/repos/acme/web/coverage?branch=" + "b" * 300)
    assert reply.status_code == 400
    assert "255 characters" in reply.json()["detail"]


def test_a_nested_name_has_its_series_and_its_pull_requests(
    client: TestClient, upload: UploadFn
) -> None:
    upload("group/sub/web", SHAS[0], {"a.info": lcov("a.py", {1: 1, 2: 0})}, branch="main")
    series = client.get("/api/v1/repos/group/sub/web/coverage?limit=10").json()
    assert [p["commit"] for p in series["points"]] == [SHAS[0]]
    assert client.get("/api/v1/repos/group/sub/web/pulls").json()["pulls"] == []
    assert "No pull request yet" in client.get("/group/sub/web/pulls").text
    assert 'href="/group/sub/web/pulls"' in client.get("/group/sub/web").text
