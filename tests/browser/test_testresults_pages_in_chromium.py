"""The test-results parts of the pages in headless Chromium, against the
browser tests' real stack (``covworker serve``, workers, PostgreSQL, Redis):
a failing and a flaky test on the commit page, the repository's tests page,
names and messages that are markup shown as text, no console error, no
serious accessibility violation."""

from __future__ import annotations

import httpx
import pytest

from tests.browser.conftest import Stack, Visit
from tests.support.testresults import junit, payload

pytestmark = [pytest.mark.e2e, pytest.mark.integration, pytest.mark.timeout(600)]

REPO, SHA = "acme/tests", "f6" * 20
MARKUP = "<img src=x onerror=window.__xss=1>"


def send(stack: Stack, token: str, body: bytes) -> None:
    """What codecovcli upload-process --report-type test_results sends."""
    with httpx.Client(base_url=stack.base_url, timeout=60) as http:
        created = http.post(
            "/upload/test_results/v1",
            json={"slug": "acme::::tests", "commit": SHA, "service": "github",
                  "branch": "feature", "flags": ["unit"], "name": "py311"},
            headers={"Authorization": f"token {token}"},
        )  # fmt: skip
        assert created.status_code == 201, created.text
        stored = http.put(created.json()["raw_upload_location"], content=body)
        assert stored.status_code == 200, stored.text


@pytest.fixture(scope="module")
def seeded(stack: Stack) -> None:
    token = stack.cli("repo", "add", REPO).stdout.splitlines()[-1].strip()
    first = junit(("test_adds", "passed"), (MARKUP, "failed"), ("test_net", "failed"))
    send(stack, token, payload(first, junit(("test_gpu", "skipped"))))
    send(stack, token, payload(junit(("test_net", "passed"))))  # the job re-run: flaky
    stack.wait_settled(REPO, SHA)


def test_the_commit_page_and_the_tests_page_show_failures_and_flakes_as_text(
    visit: Visit, seeded: None
) -> None:
    visit.open(f"/{REPO}/commit/{SHA}")
    cards = visit.page.locator("#test-totals dd")
    assert cards.all_inner_texts() == ["2", "1", "0", "1", "1"]  # passed ... flaky
    rows = visit.page.locator("#test-failures tbody tr").all_inner_texts()
    assert any(MARKUP in row and "failed" in row for row in rows), rows
    assert any("test_net" in row and "passed on retry" in row for row in rows), rows
    assert visit.page.locator("#test-failures img").count() == 0
    assert visit.page.evaluate("() => window.__xss") is None
    assert visit.axe_serious() == []
    visit.screenshot("commit-tests")
    visit.page.get_by_role("link", name=f"Slowest and flakiest tests of {REPO}").click()
    visit.page.wait_for_url(f"**/-/tests/{REPO}")
    assert "test_net" in visit.page.locator("#flakiest").inner_text()
    assert visit.page.locator("#slowest tbody tr").count() == 4
    assert visit.axe_serious() == []
    visit.screenshot("repository-tests")
    visit.no_errors()
