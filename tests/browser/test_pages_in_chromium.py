"""The pages in headless Chromium against a real ``covworker serve``, real
worker processes, PostgreSQL and Redis; reports made by real tools."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest

from app.pullrequests.numbers import DisplayRounding, shown
from app.web.render import delta
from tests.browser.conftest import OPS_TOKEN, Stack, Visit
from tests.support.paths import REPORTS

pytestmark = [pytest.mark.e2e, pytest.mark.integration, pytest.mark.timeout(600)]

REPO = "acme/calc"
FIRST = "a1" * 20
SECOND = "b2" * 20
MERGED = "e5" * 20
XSS_COMMIT = "c3" * 20
XSS_PATH = "<script>window.__xss = 1</script>.js"
JOB_MARKUP = "<img src=x onerror=alert(2)>go"
SECRET_REPO = "acme/secret"
SECRET_COMMIT = "d4" * 20


@dataclass(frozen=True)
class Seeded:
    first: dict[str, object]
    second: dict[str, object]
    read_token: str


@pytest.fixture(scope="module")
def seeded(stack: Stack) -> Seeded:
    """Two commits of real tool reports (the second names the first as its
    parent), an upload whose path is markup, and a private repository."""
    c, go = REPORTS / "c", REPORTS / "go"
    stack.upload(REPO, FIRST, [c / "run-sum.info"], flags=("c",))
    stack.upload(REPO, FIRST, [go / "count-Sum.out"], flags=("go",))
    # The second commit comes through the HTTP front door, as CI jobs send it:
    # the upload names the branch and the parent commit.
    token = stack.cli("repo", "add", REPO).stdout.splitlines()[-1].strip()
    http_upload = {"commitid": SECOND, "branch": "feature", "parent_commit_id": FIRST}
    stack.upload_over_http(
        REPO,
        token,
        [c / "run-sum.info", c / "run-divide.info"],
        flags=["c"],
        name="c-tests",
        job_code="1234",
        ci_service="github-actions",
        **http_upload,
    )
    stack.upload_over_http(
        REPO,
        token,
        [go / "count-all.out"],
        flags=["go"],
        name=JOB_MARKUP,
        job_code="1235",
        ci_service="github-actions",
        **http_upload,
    )
    stack.sql("UPDATE commits SET branch = 'main' WHERE sha = :sha", sha=FIRST)
    stack.upload(REPO, MERGED, [c / "combined.info"], flags=("c",))
    stack.upload(REPO, MERGED, [go / "count-all.out"], flags=("go",))
    stack.sql("UPDATE commits SET branch = 'main' WHERE sha = :sha", sha=MERGED)
    xss = stack.tmp / "xss.info"
    xss.write_text(f"SF:{XSS_PATH}\nDA:1,1\nDA:2,0\nend_of_record\n")
    stack.upload(REPO, XSS_COMMIT, [xss], flags=("markup",))
    added = stack.cli("repo", "add", SECRET_REPO, "--private").stdout.splitlines()
    marker = next(i for i, line in enumerate(added) if "read token" in line)
    read_token = added[marker + 1].strip()
    stack.upload(SECRET_REPO, SECRET_COMMIT, [c / "run-sum.info"])
    for repo, sha in [
        (REPO, FIRST),
        (REPO, SECOND),
        (REPO, MERGED),
        (REPO, XSS_COMMIT),
        (SECRET_REPO, SECRET_COMMIT),
    ]:
        stack.wait_settled(repo, sha)
    return Seeded(stack.report(REPO, FIRST), stack.report(REPO, SECOND), read_token)


def check_page(visit: Visit, name: str) -> None:
    """No console error, no serious accessibility violation; a screenshot."""
    visit.screenshot(name)
    visit.no_errors()
    assert visit.axe_serious() == []


def coverage(value: object) -> str:
    """A coverage as every surface shows it (Codecov's default: 2 places, down)."""
    return f"{shown(DisplayRounding(), value)}%"  # type: ignore[arg-type]


def totals_on_page(visit: Visit) -> dict[str, str]:
    cards = visit.page.locator("#totals dd")
    return {
        cards.nth(i).get_attribute("data-total"): cards.nth(i).inner_text().strip()
        for i in range(cards.count())
    }


def test_the_commit_page_shows_what_covworker_report_prints(visit: Visit, seeded: Seeded) -> None:
    visit.open(f"/{REPO}/commit/{FIRST}")
    expected = seeded.first["totals"]
    assert isinstance(expected, dict)
    shown = totals_on_page(visit)
    assert shown["coverage"] == coverage(expected["coverage"])
    for name in ("hits", "partials", "misses", "lines", "files"):
        assert shown[name] == str(expected[name]), name
    flags = visit.page.locator("#flags tbody tr td:first-child").all_inner_texts()
    assert flags == ["c", "go"]
    uploads = visit.page.locator("#uploads tbody tr")
    assert uploads.count() == 2
    assert visit.page.locator("#uploads .state-merged").count() == 2
    check_page(visit, "commit")


def test_the_second_commit_shows_its_change_against_its_parent(
    visit: Visit, seeded: Seeded
) -> None:
    visit.open(f"/{REPO}/commit/{SECOND}")
    base_cov = seeded.first["totals"]["coverage"]  # type: ignore[index]
    head_cov = seeded.second["totals"]["coverage"]  # type: ignore[index]
    assert head_cov != base_cov
    assert visit.page.locator("#base-change").inner_text() == delta({}, head_cov - base_cov)
    assert visit.page.locator('dd[data-total="change"]').inner_text() == delta(
        {}, head_cov - base_cov
    )
    assert FIRST[:8] in visit.page.locator("#base-h + p").inner_text()
    changed = visit.page.locator("#top-changes tbody tr")
    assert changed.count() >= 1
    files = seeded.second["files"]
    assert isinstance(files, dict)
    rows = visit.page.locator("#flags tbody tr")
    cells = [rows.nth(i).locator("td").all_inner_texts() for i in range(rows.count())]
    by_flag = {row[0].strip(): row for row in cells}
    for flag, suffix in (("c", "calc.c"), ("go", "calc.go")):  # one flag per file here
        expected = next(v for p, v in files.items() if p.endswith(suffix))
        assert by_flag[flag][1] == coverage(expected["coverage"]), (flag, by_flag)
        assert by_flag[flag][6] == str(expected["lines"]), (flag, by_flag)
    check_page(visit, "commit-vs-base")


def test_the_file_table_sorts_and_filters(visit: Visit, seeded: Seeded) -> None:
    visit.open(f"/{REPO}/commit/{SECOND}")
    files = seeded.second["files"]
    assert isinstance(files, dict)

    def shown_paths() -> list[str]:
        return visit.page.locator("#files tbody td.path").all_inner_texts()

    assert shown_paths() == sorted(files)
    visit.page.click('#files th a[data-sort="coverage"]')
    visit.page.wait_for_url(re.compile(r"sort=coverage"))
    by_coverage = sorted(files, key=lambda p: (files[p]["coverage"], p))
    assert shown_paths() == by_coverage
    visit.page.click('#files th a[data-sort="coverage"]')
    visit.page.wait_for_url(re.compile(r"order=desc"))
    assert [files[p]["coverage"] for p in shown_paths()] == sorted(
        (files[p]["coverage"] for p in files), reverse=True
    )
    visit.page.click('#files th a[data-sort="misses"]')
    visit.page.wait_for_url(re.compile(r"sort=misses"))
    assert [files[p]["misses"] for p in shown_paths()] == sorted(files[p]["misses"] for p in files)
    visit.page.fill("#q", ".go")
    visit.page.press("#q", "Enter")
    visit.page.wait_for_url(re.compile(r"q=\.go"))
    expected = sorted(
        (p for p in files if ".go" in p.lower()), key=lambda p: (files[p]["misses"], p)
    )
    assert expected and shown_paths() == expected
    visit.no_errors()


def test_every_page_loads_without_errors_or_serious_accessibility_violations(
    visit: Visit, seeded: Seeded
) -> None:
    visit.open("/")
    points = visit.page.locator("svg.spark polyline").get_attribute("points")
    assert points is not None and len(points.split()) == 2  # main's two settled commits
    check_page(visit, "repositories")
    visit.open(f"/{REPO}")
    assert visit.page.locator("#commits tbody tr").count() == 4
    check_page(visit, "commits")
    for some_file in sorted(seeded.second["files"]):  # type: ignore[call-overload]
        visit.open(f"/{REPO}/commit/{SECOND}")
        visit.page.get_by_role("link", name=some_file, exact=True).click()
        visit.page.wait_for_url(re.compile(r"/file"))
        assert visit.page.locator("h1").inner_text() == some_file
        assert visit.page.locator("#lines tbody tr").count() >= 1
    check_page(visit, "file")
    badge = visit.open(f"/{REPO}/badge.svg")
    assert badge.headers["content-type"].startswith("image/svg+xml")
    visit.open("/-/ops", expect_status=401)
    visit.page.fill("#token", OPS_TOKEN)
    visit.page.click("button[type=submit]")
    visit.page.wait_for_url(re.compile(r"/-/ops$"))
    assert visit.page.locator("#queue").is_visible()
    assert visit.page.locator("#notifications tbody tr").count() >= 4
    check_page(visit, "ops")
    visit.page.wait_for_function(
        "() => document.getElementById('refresh-status').textContent.startsWith('Updated')",
        timeout=20_000,
    )
    assert visit.page.locator("#ops-live #queue").is_visible()
    visit.no_errors()


def test_a_path_that_is_markup_renders_as_text(visit: Visit, seeded: Seeded) -> None:
    visit.open(f"/{REPO}/commit/{XSS_COMMIT}")
    assert visit.page.locator("#files td.path").inner_text() == XSS_PATH
    visit.page.click("#files td.path a")
    visit.page.wait_for_url(re.compile(r"/file/"))
    assert visit.page.locator("h1").inner_text() == XSS_PATH
    assert visit.page.evaluate("() => window.__xss") is None
    visit.open(f"/{REPO}/commit/{SECOND}")
    jobs = visit.page.locator("#uploads tbody td:nth-child(2)").all_inner_texts()
    assert any(JOB_MARKUP in job for job in jobs), jobs
    assert visit.page.locator("#uploads img").count() == 0
    visit.no_errors()


def test_a_private_repository_is_404_until_its_read_token_is_given(
    visit: Visit, seeded: Seeded, stack: Stack
) -> None:
    visit.open(f"/{SECRET_REPO}", expect_status=404)
    assert SECRET_REPO not in visit.page.locator("main").inner_text()
    check_page(visit, "not-found")
    visit.open(f"/{SECRET_REPO}/commit/{SECRET_COMMIT}", expect_status=404)
    visit.open("/")
    assert SECRET_REPO not in visit.page.locator("main").inner_text()
    visit.open(f"/-/login?next=/{SECRET_REPO}")
    check_page(visit, "login")
    visit.page.fill("#token", "not-the-token")
    visit.page.click("button[type=submit]")
    visit.page.wait_for_url(re.compile(f"/{SECRET_REPO}$"))
    assert visit.page.locator("h1").inner_text() == "Not found"
    visit.expected.add(404)
    visit.open(f"/-/login?next=/{SECRET_REPO}")
    visit.page.fill("#token", seeded.read_token)
    visit.page.click("button[type=submit]")
    visit.page.wait_for_url(re.compile(f"/{SECRET_REPO}$"))
    assert SECRET_REPO in visit.page.locator("h1").inner_text()
    check_page(visit, "private-signed-in")
