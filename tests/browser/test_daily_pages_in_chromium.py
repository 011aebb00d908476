"""The pages a team opens every day, in headless Chromium against a real
``covworker serve``, worker processes, PostgreSQL and Redis: coverage over
time on the repository page, the pull requests, the commit page's file tree
and the file page's leads (keyboard included). Reports are real tools'
(tests/fixtures/reports); the pull request and what feedback sent are
written as feedback writes them (its own tests run it against Prism)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

import pytest

from tests.browser.conftest import Stack, Visit
from tests.support.paths import REPORTS

pytestmark = [pytest.mark.e2e, pytest.mark.integration, pytest.mark.timeout(600)]

REPO = "acme/daily"
DAYS = [f"{i:02x}" * 20 for i in range(0x10, 0x14)]  # four commits on main, a day apart
HEAD = "9e" * 20  # a pull request's head
TITLE = "<img src=x onerror=alert(1)> speed up sums"


def check_page(visit: Visit, name: str) -> None:
    visit.screenshot(name)
    visit.no_errors()
    assert visit.axe_serious() == []


@pytest.fixture(scope="module")
def seeded(stack: Stack) -> None:
    c, go = REPORTS / "c", REPORTS / "go"
    runs = [c / "run-sum.info", c / "run-divide.info", c / "run-classify.info", c / "combined.info"]
    for day, (sha, run) in enumerate(zip(DAYS, runs, strict=True)):
        stack.upload(REPO, sha, [run], flags=("c",))
        stack.upload(
            REPO, sha, [go / ("count-Sum.out" if day % 2 else "count-all.out")], flags=("go",)
        )
    stack.upload(REPO, HEAD, [c / "combined.info"], flags=("c",))
    for sha in [*DAYS, HEAD]:
        stack.wait_settled(REPO, sha)
    start = datetime(2026, 3, 1, tzinfo=UTC)
    for day, sha in enumerate(DAYS):
        stack.sql(
            "UPDATE commits SET branch = 'main', created_at = :at WHERE sha = :sha",
            sha=sha,
            at=start + timedelta(days=day),
        )
    stack.sql(
        "UPDATE commits SET branch = 'speed', created_at = :at, pullid = 12 WHERE sha = :sha",
        sha=HEAD,
        at=start + timedelta(days=5),
    )
    stack.sql(
        "INSERT INTO pulls (repository_id, number, state, title, url, base_branch, base_sha,"
        " head_branch, head_sha, created_at, updated_at)"
        " SELECT id, 12, 'open', :title, 'https://github.com/acme/daily/pull/12', 'main', :base,"
        " 'speed', :head, :at, :at FROM repositories WHERE name = :repo",
        title=TITLE,
        base=DAYS[-1],
        head=HEAD,
        at=start + timedelta(days=5),
        repo=REPO,
    )
    path = json.loads(stack.cli("report", "--repo", REPO, "--commit", HEAD, "--json").stdout)
    calc = next(p for p in path["files"] if p.endswith("calc.c"))
    rows = [
        (
            "prepare",
            {
                # as app/feedback/prepare.py's prepare writes it
                "pull": {
                    "number": 12,
                    "url": "https://github.com/acme/daily/pull/12",
                    "title": TITLE,
                    "base_branch": "main",
                    "base_sha": DAYS[-1],
                    "state": "open",
                },
                "patch": 50.0,
                "base": DAYS[-1],
                "yaml_errors": [],
                "diff": [{"path": calc, "hits": [9], "misses": [10], "partials": []}],
            },
        ),
        ("status:codecov/project", {"context": "codecov/project", "state": "success"}),
        ("status:codecov/patch", {"context": "codecov/patch", "state": "failure"}),
        ("comment", {"pull": 12, "body": "## Coverage\n" + TITLE}),
    ]
    for target, payload in rows:
        stack.sql(
            "INSERT INTO pull_deliveries (commit_id, report_version, target, payload, state,"
            " attempts, sent_at, created_at)"
            " SELECT c.id, r.version, :target, CAST(:payload AS json), 'sent', 1, :at, :at"
            " FROM commits c JOIN commit_reports r ON r.commit_id = c.id WHERE c.sha = :sha",
            target=target,
            payload=json.dumps(payload),
            at=start + timedelta(days=5),
            sha=HEAD,
        )


def test_the_repository_page_charts_coverage_over_time_per_flag(visit: Visit, seeded: None) -> None:
    visit.open(f"/{REPO}")
    points = visit.page.locator("#history svg.chart a")
    assert points.count() == len(DAYS)
    hrefs = [points.nth(i).get_attribute("href") for i in range(points.count())]
    assert hrefs == [f"/{REPO}/commit/{sha}" for sha in DAYS]
    series = visit.page.request.get(f"/api/v1/repos/{REPO}/coverage?branch=main").json()
    assert [p["commit"] for p in series["points"]] == DAYS
    check_page(visit, "repository-history")
    visit.page.get_by_role("link", name="go", exact=True).click()
    visit.page.wait_for_url(re.compile(r"flag=go"))
    assert "flag go" in visit.page.locator("#history figcaption").inner_text()
    points.last.click()
    visit.page.wait_for_url(re.compile(DAYS[-1]))
    visit.open(f"/{REPO}")
    visit.page.get_by_role("link", name="Flaky tests").click()
    visit.page.wait_for_url(re.compile(r"/-/tests/"))
    visit.no_errors()


def test_the_pull_requests_page_shows_each_pull_and_links_its_head(
    visit: Visit, seeded: None
) -> None:
    visit.open(f"/{REPO}")
    visit.page.get_by_role("link", name="Pull requests").click()
    visit.page.wait_for_url(re.compile(r"/pulls$"))
    row = visit.page.locator("#pulls tbody tr").first
    assert TITLE in row.inner_text()  # the title as text, not markup
    assert visit.page.locator("#pulls img").count() == 0
    assert "50.00%" in row.inner_text()
    assert "success codecov/project" in row.inner_text()
    assert row.locator("a[rel~=noopener]").get_attribute("href") == (
        "https://github.com/acme/daily/pull/12"
    )
    check_page(visit, "pulls")
    row.locator("a.sha").click()
    visit.page.wait_for_url(re.compile(HEAD))
    comment = visit.page.locator("#pull-comment")
    comment.locator("summary").click()
    assert TITLE in comment.locator("pre").inner_text()
    check_page(visit, "pull-head-comment")  # the comment as last sent, unfolded


def test_the_file_tree_folds_and_its_treemap_leads_to_a_directory(
    visit: Visit, seeded: None
) -> None:
    visit.open(f"/{REPO}/commit/{DAYS[-1]}")
    tree = visit.page.locator("#tree")
    regions = tree.locator("svg.treemap a")
    assert regions.count() >= 1
    check_page(visit, "file-tree")
    folded = tree.locator("details.dir").first
    assert folded.count() == 1
    folded.locator(":scope > summary").focus()
    was_open = folded.evaluate("d => d.open")
    visit.page.keyboard.press("Enter")  # fold or unfold from the keyboard
    assert folded.evaluate("d => d.open") != was_open
    regions.first.click()
    visit.page.wait_for_load_state()
    assert visit.page.locator("#tree").is_visible()
    visit.no_errors()


def test_the_file_page_moves_between_misses_with_links_and_the_keyboard(
    visit: Visit, seeded: None
) -> None:
    data = visit.page.request.get(f"/api/v1/repos/{REPO}/commits/{HEAD}").json()
    calc = next(f["path"] for f in data["table"]["files"] if f["path"].endswith("calc.c"))
    lines = visit.page.request.get(
        f"/api/v1/repos/{REPO}/commits/{HEAD}/file", params={"path": calc}
    ).json()
    stops = lines["stops"]
    assert len(stops) >= 3
    visit.open(f"/{REPO}/commit/{HEAD}/file?path={calc}")
    assert visit.page.locator("tr.added").count() == 2  # lines 9 and 10 of the patch
    check_page(visit, "file-leads")
    visit.page.locator("main").click()
    visit.page.keyboard.press("n")
    assert visit.page.evaluate("location.hash") == f"#L{stops[0]}"
    visit.page.keyboard.press("n")
    assert visit.page.evaluate("location.hash") == f"#L{stops[1]}"
    visit.page.keyboard.press("p")
    assert visit.page.evaluate("location.hash") == f"#L{stops[0]}"
    # Without a key: the row's own "next" link, then the anchor of a line.
    visit.page.locator(f"#L{stops[0]} a.lead").last.click()
    assert visit.page.evaluate("location.hash") == f"#L{stops[1]}"
    visit.open(f"/{REPO}/commit/{HEAD}")  # a line addressed from another page
    visit.open(f"/{REPO}/commit/{HEAD}/file?path={calc}#L{stops[2]}")
    assert visit.page.locator(f"tr#L{stops[2]}").is_visible()
    visit.page.keyboard.press("p")
    assert visit.page.evaluate("location.hash") == f"#L{stops[1]}"
    visit.no_errors()


LONG_REPO, LONG_SHA = "acme/long", "10" * 20
#: Two misses a page of instrumented lines apart (app/web/lines.py FILE_PAGE_LINES).
NEAR, FAR = 5, 600


@pytest.fixture(scope="module")
def long_file(stack: Stack) -> str:
    """A file longer than one page, a miss on its first page and one past it."""
    lines = [f"DA:{n},{0 if n in (NEAR, FAR) else 1}" for n in range(1, 1101)]
    report = stack.tmp / "long.info"
    report.write_text("\n".join(["SF:src/long.c", *lines, "end_of_record", ""]))
    stack.upload(LONG_REPO, LONG_SHA, [report])
    stack.wait_settled(LONG_REPO, LONG_SHA)
    return f"/{LONG_REPO}/commit/{LONG_SHA}/file/src/long.c"


def test_the_file_page_keys_go_on_past_the_page_to_the_next_miss(
    visit: Visit, long_file: str
) -> None:
    visit.open(long_file)
    assert visit.page.locator(f"tr#L{FAR}").count() == 0  # on a later page
    visit.page.locator("main").click()
    visit.page.keyboard.press("n")
    assert visit.page.evaluate("location.hash") == f"#L{NEAR}"
    visit.page.keyboard.press("n")  # the page's last miss: on past it
    visit.page.wait_for_url(re.compile(rf"from=\d+#L{FAR}$"))
    assert visit.page.locator(f"tr#L{FAR}").is_visible()
    check_page(visit, "file-leads-past-the-page")
    visit.page.keyboard.press("p")
    visit.page.wait_for_url(re.compile(rf"#L{NEAR}$"))
    assert visit.page.locator(f"tr#L{NEAR}").is_visible()
    visit.no_errors()
