"""The pages and the badge: what each shows of a stored commit and file."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient
from markupsafe import escape

from app.embedded import EmbeddedRuntime
from app.web.lines import FILE_PAGE_LINES, LEAD_CONTEXT
from tests.app.web.conftest import Upload, lcov

pytestmark = pytest.mark.timeout(60)


SHA1 = "1" * 40


SHA2 = "2" * 40


def test_a_path_from_an_upload_renders_as_text(client: TestClient, upload: Upload) -> None:
    evil = "<script>alert(1)</script>.js"
    upload("acme/web", SHA1, {"x.info": lcov(evil, {1: 1})})
    for url in (f"/acme/web/commit/{SHA1}", f"/acme/web/commit/{SHA1}/file/{evil}"):
        html = client.get(url).text
        assert "<script>" not in html
        assert "&lt;script&gt;alert(1)&lt;/script&gt;.js" in html


def test_the_file_page_marks_lines_and_folds_runs_of_misses(
    client: TestClient, upload: Upload
) -> None:
    hits = {1: 1, 2: 0, 3: 0, 4: 0, 5: 0, 6: 0, 7: 3, 8: 0}
    upload("acme/web", SHA1, {"f.info": lcov("f.py", hits, {7: (1, 2)})})
    data = client.get(f"/api/v1/repos/acme/web/commits/{SHA1}/files/f.py").json()
    assert [(r["line"], r["kind"]) for r in data["lines"]] == [
        (1, "hit"),
        (2, "miss"),
        (3, "miss"),
        (4, "miss"),
        (5, "miss"),
        (6, "miss"),
        (7, "partial"),
        (8, "miss"),
    ]
    html = client.get(f"/acme/web/commit/{SHA1}/file/f.py").text
    assert "5 missed lines" in html and '<a href="#L2">2\u20136</a>' in html
    assert "1/2" in html
    assert client.get(f"/acme/web/commit/{SHA1}/file/nope.py").status_code == 404


def test_the_badge_is_an_svg_with_the_coverage(client: TestClient, upload: Upload) -> None:
    upload("acme/web", SHA1, {"a.info": lcov("a.py", {1: 1, 2: 1, 3: 0})})
    reply = client.get("/acme/web/badge.svg")
    assert reply.headers["content-type"].startswith("image/svg+xml")
    assert ">66.66%<" in reply.text  # two places, down, as the pages


def test_absolute_and_folded_paths_link_to_their_file_page(
    client: TestClient, upload: Upload
) -> None:
    paths = ["/ci/build/src/a.c", "src/upload/b.py", "c.py"]
    upload("acme/web", SHA1, {"x.info": "".join(lcov(p, {1: 1}) for p in paths)})
    html = client.get(f"/acme/web/commit/{SHA1}").text
    links = re.findall(r'<a href="(/acme/web/commit/[^"]+/file[^"]*)">', html)
    assert len(links) == 3
    for link in links:
        page = client.get(link.replace("&amp;", "&"))
        assert page.status_code == 200, link
    assert f"/acme/web/commit/{SHA1}/file/c.py" in links


def test_a_failed_upload_shows_its_readable_error(client: TestClient, upload: Upload) -> None:
    upload(
        "acme/web",
        SHA1,
        {"good.info": lcov("a.py", {1: 1}), "bad.txt": "this is not a coverage report\n"},
    )
    data = client.get(f"/api/v1/repos/acme/web/commits/{SHA1}").json()
    failed = [u for u in data["uploads"] if u["state"] == "error"]
    assert len(failed) == 1 and failed[0]["error"]
    assert data["state"] == "errors" and data["totals"]["lines"] == 1
    html = client.get(f"/acme/web/commit/{SHA1}").text
    assert '<div class="error small">' in html
    assert str(escape(failed[0]["error"])) in html


def test_a_large_file_page_is_a_window_of_lines_with_links_to_the_rest(
    client: TestClient, upload: Upload
) -> None:
    """What one GET costs is bounded by the window, not by the file."""
    total = 3 * FILE_PAGE_LINES + 10
    upload("acme/web", SHA1, {"big.info": lcov("big.py", {n: n % 3 for n in range(1, total + 1)})})
    page = client.get(f"/acme/web/commit/{SHA1}/file/big.py")
    assert page.status_code == 200 and page.headers["cache-control"] == "private, no-store"
    assert len(page.content) < 1_000_000
    assert f"of {total} instrumented lines" in page.text and 'rel="next"' in page.text
    assert 'rel="prev"' not in page.text

    api = f"/api/v1/repos/acme/web/commits/{SHA1}/files/big.py"
    first = client.get(api).json()
    assert len(first["lines"]) == FILE_PAGE_LINES and first["lines"][0]["line"] == 1
    assert first["window"]["next_from"] == FILE_PAGE_LINES + 1
    last = client.get(api, params={"from": 3 * FILE_PAGE_LINES + 1}).json()
    assert [r["line"] for r in last["lines"]] == list(range(3 * FILE_PAGE_LINES + 1, total + 1))
    assert last["window"] == {
        "from": 3 * FILE_PAGE_LINES + 1,
        "to": total,
        "instrumented_lines": total,
        "previous_from": 2 * FILE_PAGE_LINES + 1,
        "next_from": None,
    }
    second = FILE_PAGE_LINES + 1
    middle = client.get(f"/acme/web/commit/{SHA1}/file/big.py", params={"from": second})
    assert 'rel="prev"' in middle.text and "from=1" in middle.text
    assert f"from={2 * FILE_PAGE_LINES + 1}" in middle.text


def test_the_last_miss_of_a_file_page_leads_to_the_next_one_past_its_lines(
    client: TestClient, upload: Upload
) -> None:
    """The page shows a window of lines; its first and last misses lead past
    it (``?lead=``), so ``n``/``p`` and the links go through the whole file."""
    far = FILE_PAGE_LINES + 100
    hits = {n: 1 for n in range(1, 2 * FILE_PAGE_LINES + 1)} | {5: 0, far: 0}
    upload("acme/web", SHA1, {"big.info": lcov("big.py", hits)})
    url = f"/acme/web/commit/{SHA1}/file/big.py"

    first = client.get(url).text
    hop = client.get(url, params={"lead": "next", "at": 5}, follow_redirects=False)
    landed = client.get(hop.headers["location"].split("#")[0]).text
    back = client.get(
        url,
        params={"from": far - LEAD_CONTEXT, "lead": "previous", "at": far},
        follow_redirects=False,
    )
    by_query = client.get(
        f"/acme/web/commit/{SHA1}/file",
        params={"path": "big.py", "lead": "next", "at": 5},
        follow_redirects=False,
    )

    assert 'data-lead="next" href="?lead=next&amp;at=5"' in first
    assert 'data-lead="previous"' not in first  # the file's first lines
    assert hop.status_code == 303
    assert hop.headers["location"] == f"{url}?from={far - LEAD_CONTEXT}#L{far}"
    assert f'<tr class="miss" id="L{far}" data-stop>' in landed
    assert f'data-lead="previous" href="?lead=previous&amp;at={far}"' in landed
    assert back.status_code == 303 and back.headers["location"] == f"{url}?from=1#L5"
    assert by_query.headers["location"] == (
        f"/acme/web/commit/{SHA1}/file?path=big.py&from={far - LEAD_CONTEXT}#L{far}"
    )
    unknown = client.get(f"/acme/web/commit/{SHA1}/file/nope.py", params={"lead": "next"})
    assert unknown.status_code == 404


def test_a_page_without_misses_leads_to_the_next_one_past_its_lines(
    client: TestClient, upload: Upload
) -> None:
    far = FILE_PAGE_LINES + 100
    hits = {n: 1 for n in range(1, 2 * FILE_PAGE_LINES + 1)} | {far: 0}
    upload("acme/web", SHA1, {"big.info": lcov("big.py", hits)})
    url = f"/acme/web/commit/{SHA1}/file/big.py"

    first = client.get(url).text
    hop = client.get(url, params={"lead": "next", "at": FILE_PAGE_LINES}, follow_redirects=False)

    assert "No missed or partial line in these lines." in first
    assert f'data-lead="next" href="?lead=next&amp;at={FILE_PAGE_LINES}"' in first
    assert hop.headers["location"] == f"{url}?from={far - LEAD_CONTEXT}#L{far}"


def test_the_badge_shows_the_branch_it_is_asked_for_else_the_default_branch(
    client: TestClient, upload: Upload
) -> None:
    upload("acme/web", SHA1, {"a.info": lcov("a.py", {1: 1, 2: 0})}, branch="main")
    upload("acme/web", SHA2, {"a.info": lcov("a.py", {1: 1, 2: 1, 3: 0})}, branch="feature")
    assert ">50.00%<" in client.get("/acme/web/badge.svg").text
    assert ">66.66%<" in client.get("/acme/web/badge.svg", params={"branch": "feature"}).text
    assert ">unknown<" in client.get("/acme/web/badge.svg", params={"branch": "nope"}).text
    hostile = '"><script>alert(1)</script>' + "x" * 5000
    reply = client.get("/acme/web/badge.svg", params={"branch": hostile})
    assert reply.status_code == 200 and ">unknown<" in reply.text and "<script" not in reply.text
    nested = client.get("/acme/web/badge.svg?branch=feature").text
    assert ">66.66%<" in nested


def test_the_commit_page_and_the_status_name_the_records_an_upload_skipped(
    client: TestClient, upload: Upload, runtime: EmbeddedRuntime
) -> None:
    from app.cli.render import uploads_table
    from app.queries import commit_status
    from tests.app.cli.test_render import text

    bad = "TN:\nSF:src/a.py\nDA:0,skipped\nDA:1,1\nFNDA:,not_hit\nDA:DA:130,0\nend_of_record\n"
    upload("acme/web", SHA1, {"a.info": bad})
    summary = (
        "3 records skipped: `DA:0,skipped` at line 3, `FNDA:,not_hit` at line 5, "
        "`DA:DA:130,0` at line 6"
    )
    html = client.get(f"/acme/web/commit/{SHA1}").text
    assert str(escape(summary)) in html
    status = commit_status(runtime.app.services, "acme/web", SHA1)
    (row,) = status["upload_list"]
    assert row["state"] == "merged" and row["skipped"] == summary
    assert "3 records skipped" in " ".join(text(uploads_table([row])).split())
    assert client.get(f"/api/v1/repos/acme/web/commits/{SHA1}").json()["totals"]["lines"] == 1
