"""The pages with a Git provider: source through the provider, the pull request, the diff.

The provider is the fake GitHub behind Prism (tests/support/fake_github.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from app.db.models import Commit, Repository
from app.db.pull_deliveries import status_target
from app.embedded import EmbeddedRuntime
from app.feedback import delivery, rows
from app.feedback import prepare as preparing
from app.feedback.rows import Prepared, Target
from app.providers import Providers
from app.providers.github import GitHub, TokenAuth
from app.providers.http import ProviderHttp
from app.web.pullpages import SOURCE_PAGE_ROWS
from tests.app.web.conftest import Upload, lcov
from tests.support.fake_github import (
    GITHUB_SPEC,
    FakeGitHub,
    PrismProxy,
    needs_prism,
    prism_proxy,
)

pytestmark = [pytest.mark.timeout(120), needs_prism]

SHA = "1" * 40
SOURCE = b"x = 1\nname = '<script>alert(1)</script>'\nif x:\n    pass\n"


@pytest.fixture
def github(tmp_path: Path, runtime: EmbeddedRuntime) -> Iterator[tuple[FakeGitHub, PrismProxy]]:
    with FakeGitHub() as fake, prism_proxy(GITHUB_SPEC, fake.url, tmp_path / "prism.log") as p:
        http = ProviderHttp(p.url, timeout_s=10)
        runtime.app.services.providers = Providers(
            {"github": GitHub(http, TokenAuth("t"))}, http.counter
        )
        yield fake, p
        runtime.app.services.providers = Providers.none()
        assert p.violations() == []


def test_the_file_page_shows_the_source_at_the_commit_escaped_with_each_line_marked(
    client: TestClient, upload: Upload, github: tuple[FakeGitHub, PrismProxy]
) -> None:
    fake, _ = github
    upload("acme/web", SHA, {"a.info": lcov("src/a.py", {1: 1, 2: 0, 3: 4}, {3: (1, 2)})})
    fake.add_file("acme/web", SHA, "src/a.py", SOURCE)

    page = client.get(f"/acme/web/commit/{SHA}/file/src/a.py")
    again = client.get(f"/acme/web/commit/{SHA}/file/src/a.py")

    assert page.status_code == again.status_code == 200
    html = page.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>alert" not in html
    rows = html.split('id="source"', 1)[1]
    assert '<tr class="hit" id="L1"><td class="num"><a href="#L1">1</a></td>' in rows
    assert '<tr class="miss" id="L2" data-stop><td class="num"><a href="#L2">2</a></td>' in rows
    assert '<tr class="partial" id="L3"><td class="num"><a href="#L3">3</a></td>' in rows
    assert (
        '<tr class="" id="L4"><td class="num"><a href="#L4">4</a></td>' in rows
    )  # not instrumented
    # The second page came from the cache.
    assert len(fake.calls("GET", "/contents/src/a.py")) == 1


def test_a_megabyte_of_newlines_is_shown_a_thousand_source_rows_per_get(
    client: TestClient, upload: Upload, github: tuple[FakeGitHub, PrismProxy]
) -> None:
    """1 MiB of newlines with one instrumented line was one page of 1,048,576
    rows (118 MB, 8 CPU-s); each GET now shows at most SOURCE_PAGE_ROWS rows,
    linking the rows before and after."""
    fake, _ = github
    upload("acme/web", SHA, {"a.info": lcov("src/big.py", {1_048_000: 1})})
    fake.add_file("acme/web", SHA, "src/big.py", b"\n" * (1024 * 1024 - 6) + b"x = 1")
    url = f"/acme/web/commit/{SHA}/file/src/big.py"

    first = client.get(url)
    last = client.get(f"{url}?from=1047001")
    as_json = client.get(f"/api/v1/repos/acme/web/commits/{SHA}/files/src/big.py?from=1048001")

    assert first.status_code == last.status_code == as_json.status_code == 200
    assert len(first.content) < 200_000
    assert first.text.count("<tr class") == SOURCE_PAGE_ROWS
    assert '<a rel="next" href="?from=1001#source">' in first.text
    assert 'rel="prev"' not in first.text
    assert 'id="L1047001"' in last.text and 'id="L1048000"' in last.text
    assert '<tr class="hit" id="L1048000">' in last.text
    assert '<a rel="prev" href="?from=1046001#source">' in last.text
    assert '<a rel="next" href="?from=1048001#source">' in last.text
    got = as_json.json()
    assert [r["line"] for r in got["source"]] == list(range(1048001, 1048572))
    assert got["source"][-1]["text"] == "x = 1"
    assert got["source_window"] == {
        "from": 1048001, "to": 1048571, "total": 1048571,
        "previous_from": 1047001, "next_from": None,
    }  # fmt: skip


def test_the_source_rows_link_only_the_misses_they_show_and_lead_past_the_rest(
    client: TestClient, upload: Upload, github: tuple[FakeGitHub, PrismProxy]
) -> None:
    """A window of instrumented lines can span more source lines than one GET
    shows: a miss past the rows shown is reached through ``?lead=``, never
    by an anchor the page does not have."""
    fake, _ = github
    later = SOURCE_PAGE_ROWS + 500
    hits = {n: 1 for n in range(4, 2 * SOURCE_PAGE_ROWS + 1, 4)} | {400: 0, later: 0}
    upload("acme/web", SHA, {"a.info": lcov("src/long.py", hits)})
    fake.add_file("acme/web", SHA, "src/long.py", b"x\n" * (2 * SOURCE_PAGE_ROWS))
    url = f"/acme/web/commit/{SHA}/file/src/long.py"

    page = client.get(url).text
    data = client.get(f"/api/v1/repos/acme/web/commits/{SHA}/files/src/long.py").json()
    hop = client.get(url, params={"lead": "next", "at": 400}, follow_redirects=False)

    assert data["source_window"]["to"] == SOURCE_PAGE_ROWS and data["stops"] == [400]
    assert f'href="#L{later}"' not in page
    assert 'data-lead="next" href="?lead=next&amp;at=400"' in page
    assert hop.headers["location"].endswith(f"#L{later}")
    landed = client.get(hop.headers["location"].split("#")[0]).text
    assert f'id="L{later}" data-stop' in landed


def test_without_a_provider_the_file_page_shows_the_line_map_as_before(
    client: TestClient, upload: Upload
) -> None:
    upload("acme/web", SHA, {"a.info": lcov("src/a.py", {1: 1, 2: 0})})

    html = client.get(f"/acme/web/commit/{SHA}/file/src/a.py").text

    assert "The server keeps no source code" in html and 'id="source"' not in html


def found_pull(services: Any, provider: Any, repo: Any, commit: Any, version: int) -> Prepared:
    """What prepare stores for the pages (the shape app/feedback/preparing.py writes)."""
    info = {
        "pull": {
            "number": 7,
            "url": "https://github.com/acme/web/pull/7",
            "title": "Add <b>mul</b>",
            "base_branch": "main",
            "base_sha": "2" * 40,
            "state": "open",
        },
        "base": "2" * 40,
        "patch": 60.0,
        "yaml_errors": ["coverage.precision: must be an integer from 0 to 5"],
        "diff": [
            {
                "path": "src/a.py",
                "patch": {"hits": 3, "lines": 5},
                "hits": [10, 11, 14],
                "misses": [12],
                "partials": [13],
            }
        ],
        "not_measured": ["assets/<huge>.json"],
        "not_measured_count": 1,
        "diff_truncated": True,
    }
    status = {
        "context": "codecov/patch",
        "state": "success",
        "description": "60.00% of diff hit (target 50.00%)",
        "target_url": "",
    }
    return Prepared(targets=[Target(status_target("codecov/patch"), status)], info=info)


def test_the_commit_page_shows_the_pull_request_and_the_added_lines_marked(
    client: TestClient,
    upload: Upload,
    runtime: EmbeddedRuntime,
    github: tuple[FakeGitHub, PrismProxy],
) -> None:
    services = runtime.app.services
    found, services.providers = services.providers, Providers.none()  # no feedback of its own
    upload("acme/web", SHA, {"a.info": lcov("src/a.py", {10: 1, 11: 1, 12: 0})})
    services.providers = found
    with services.sessions() as session:
        commit_id = session.scalar(sa.select(Commit.id).where(Commit.sha == SHA))
    assert commit_id is not None
    prepare_id = rows.enqueue_prepare(services, commit_id, 1)
    assert prepare_id is not None
    attempt = delivery.deliver(services, services.providers, prepare_id, found_pull)
    assert attempt.state == "sent"

    html = client.get(f"/acme/web/commit/{SHA}").text

    section = html.split('id="pull-request"', 1)[1].split("</section>", 1)[0]
    link = '<a href="https://github.com/acme/web/pull/7" rel="noopener">'
    assert link + "#7 Add &lt;b&gt;mul&lt;/b&gt;</a>" in section
    assert "into main" in section and "60.00" in section
    assert "codecov.yml: coverage.precision: must be an integer from 0 to 5" in section
    marks = [("hit", 10), ("hit", 11), ("miss", 12), ("partial", 13), ("hit", 14)]
    for kind, line in marks:
        assert f'<span class="mark {kind}" title="{kind}">{line}</span>' in section
    assert "status:codecov/patch: pending" in section  # not delivered yet
    unmeasured = section.split('id="not-measured"', 1)[1].split("</div>", 1)[0]
    assert "Not measured (1 file of the diff: the provider gave no patch):" in unmeasured
    assert '<li class="path">assets/&lt;huge&gt;.json</li>' in unmeasured
    assert "cut short at its limit" in unmeasured


def test_a_pull_request_link_that_is_not_a_web_address_is_shown_unlinked(
    client: TestClient,
    upload: Upload,
    runtime: EmbeddedRuntime,
    github: tuple[FakeGitHub, PrismProxy],
) -> None:
    def forged(services: Any, provider: Any, repo: Any, commit: Any, version: int) -> Prepared:
        prepared = found_pull(services, provider, repo, commit, version)
        prepared.info["pull"]["url"] = "JavaScript:alert(document.cookie)"
        return prepared

    services = runtime.app.services
    found, services.providers = services.providers, Providers.none()
    upload("acme/web", SHA, {"a.info": lcov("src/a.py", {10: 1, 11: 1, 12: 0})})
    services.providers = found
    with services.sessions() as session:
        commit_id = session.scalar(sa.select(Commit.id).where(Commit.sha == SHA))
    assert commit_id is not None
    prepare_id = rows.enqueue_prepare(services, commit_id, 1)
    assert prepare_id is not None
    assert delivery.deliver(services, services.providers, prepare_id, forged).state == "sent"

    html = client.get(f"/acme/web/commit/{SHA}").text

    section = html.split('id="pull-request"', 1)[1].split("</section>", 1)[0]
    assert "javascript:" not in section.lower()
    assert "<p>#7 Add &lt;b&gt;mul&lt;/b&gt;" in section


def test_the_commit_page_says_why_the_provider_refused(
    client: TestClient,
    upload: Upload,
    runtime: EmbeddedRuntime,
    github: tuple[FakeGitHub, PrismProxy],
) -> None:
    fake, _ = github
    services = runtime.app.services
    found, services.providers = services.providers, Providers.none()
    upload("acme/web", SHA, {"a.info": lcov("src/a.py", {1: 1})})
    services.providers = found
    fake.state.forbidden.add("acme/web")  # the token cannot see the repository
    with services.sessions() as session:
        commit_id = session.scalar(sa.select(Commit.id).where(Commit.sha == SHA))
    assert commit_id is not None
    prepare_id = rows.enqueue_prepare(services, commit_id, 1)
    assert prepare_id is not None
    assert delivery.deliver(services, found, prepare_id, preparing.prepare).state == "failed"

    html = client.get(f"/acme/web/commit/{SHA}").text

    deliveries = html.split('id="pull-deliveries"', 1)[1].split("</ul>", 1)[0]
    assert "prepare: failed (github refused access to acme/web (404)" in deliveries


def repository_reads(fake: FakeGitHub) -> int:
    """``GET /repos/acme/web`` calls: the repository itself, whether it is private."""
    return sum(1 for call in fake.calls("GET") if call.path == "/repos/acme/web")


def test_a_repository_private_on_the_provider_shows_no_source_and_is_then_not_found(
    client: TestClient, upload: Upload, github: tuple[FakeGitHub, PrismProxy], runtime: Any
) -> None:
    fake, _ = github
    fake.state.private.add("acme/web")
    upload("acme/web", SHA, {"a.info": lcov("src/a.py", {1: 1, 2: 0})})
    fake.add_file("acme/web", SHA, "src/a.py", SOURCE)
    # The upload's feedback read the repository: it is private from then on.
    assert client.get(f"/acme/web/commit/{SHA}").status_code == 404
    # As a repository added before covworker asked (its privacy unknown).
    services = runtime.app.services
    with services.sessions.begin() as session:
        session.execute(sa.update(Repository).values(provider_private=None))
    before = repository_reads(fake)

    # The page asks the provider before any source is fetched, and shows none.
    first = client.get(f"/acme/web/commit/{SHA}/file/src/a.py")
    then = [client.get(f"/acme/web{path}").status_code for path in ("", f"/commit/{SHA}")]

    assert first.status_code == 200 and 'id="source"' not in first.text
    assert "alert" not in first.text
    assert fake.calls("GET", "/contents/src/") == []
    assert repository_reads(fake) == before + 1
    assert then == [404, 404]
    assert client.get(f"/acme/web/commit/{SHA}/file/src/a.py").status_code == 404
    assert "acme/web" not in client.get("/").text


def test_a_repository_whose_privacy_the_provider_does_not_tell_shows_no_source(
    client: TestClient, upload: Upload, github: tuple[FakeGitHub, PrismProxy]
) -> None:
    fake, _ = github
    # The feedback's read and the file page's both fail.
    fake.fail("GET", r"^/repos/acme/web$", 502, 502)
    upload("acme/web", SHA, {"a.info": lcov("src/a.py", {1: 1, 2: 0})})
    fake.add_file("acme/web", SHA, "src/a.py", SOURCE)

    pages = [client.get(f"/acme/web/commit/{SHA}/file/src/a.py") for _ in range(2)]

    assert [p.status_code for p in pages] == [200, 200]
    assert all('id="source"' not in p.text for p in pages)
    assert fake.calls("GET", "/contents/src/") == []
    # The page asks once per PRIVACY_ASK_S, not on every view.
    assert repository_reads(fake) == 2


def test_the_source_is_shown_once_the_provider_says_the_repository_is_public(
    client: TestClient, upload: Upload, github: tuple[FakeGitHub, PrismProxy], runtime: Any
) -> None:
    fake, _ = github
    upload("acme/web", SHA, {"a.info": lcov("src/a.py", {1: 1, 2: 0})})
    fake.add_file("acme/web", SHA, "src/a.py", SOURCE)

    page = client.get(f"/acme/web/commit/{SHA}/file/src/a.py")

    assert 'id="source"' in page.text
    with runtime.app.services.sessions() as session:
        stored = session.scalar(sa.select(Repository.provider_private))
    assert stored is False


def test_the_file_page_marks_the_lines_the_pull_request_adds_and_the_commit_page_shows_its_comment(
    client: TestClient,
    upload: Upload,
    runtime: EmbeddedRuntime,
    github: tuple[FakeGitHub, PrismProxy],
) -> None:
    from datetime import UTC, datetime

    from app.db.models import PullDelivery

    services = runtime.app.services
    found, services.providers = services.providers, Providers.none()
    upload("acme/web", SHA, {"a.info": lcov("src/a.py", {9: 1, 10: 1, 11: 1, 12: 0, 13: 1})})
    services.providers = found
    with services.sessions() as session:
        commit_id = session.scalar(sa.select(Commit.id).where(Commit.sha == SHA))
    assert commit_id is not None
    prepare_id = rows.enqueue_prepare(services, commit_id, 1)
    assert prepare_id is not None
    delivery.deliver(services, services.providers, prepare_id, found_pull)
    body = "## Coverage report\n<img src=x onerror=alert(1)>"
    with services.sessions.begin() as session:
        session.add(
            PullDelivery(
                commit_id=commit_id,
                report_version=1,
                target="comment",
                payload={"pull": 7, "body": body},
                state="sent",
                sent_at=datetime(2026, 3, 1, tzinfo=UTC),
            )
        )

    data = client.get(f"/api/v1/repos/acme/web/commits/{SHA}/files/src/a.py").json()
    assert data["added"] == [10, 11, 12, 13, 14]
    assert data["stops"] == [12]
    html = client.get(f"/acme/web/commit/{SHA}/file/src/a.py").text
    assert 'class="hit added" id="L10"' in html and 'class="hit" id="L9"' in html
    assert 'class="miss added" id="L12" data-stop' in html

    page = client.get(f"/acme/web/commit/{SHA}").text
    comment = page.split('id="pull-comment"', 1)[1].split("</details>", 1)[0]
    assert "## Coverage report" in comment and "2026-03-01 00:00:00 UTC" in comment
    assert "<img" not in comment and "&lt;img src=x onerror=alert(1)&gt;" in comment
