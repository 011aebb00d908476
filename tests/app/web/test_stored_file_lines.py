"""The file page of a version whose lines the merge stored in windows
(``app.merge.file_lines``) never reads the merged report, and shows what the
page decoded from the report before; a version merged without them still
renders, from the report."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from app.api import create_app
from app.db.models import CommitReport, ReportFileLines
from app.embedded import EmbeddedRuntime
from app.settings import Settings
from app.web import reports as reports_module
from tests.app.web.conftest import Upload, lcov

pytestmark = pytest.mark.timeout(120)

SHA = "3" * 40
REPO = "acme/lines"
TOTAL = 1210


@contextmanager
def report_reads(runtime: EmbeddedRuntime) -> Iterator[list[str]]:
    """Every statement that selects a merged report's blob, while inside."""
    seen: list[str] = []

    def watch(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if statement.lstrip().upper().startswith("SELECT") and "commit_reports.report" in statement:
            seen.append(statement)

    engine = runtime.app.services.engine
    sa.event.listen(engine, "before_cursor_execute", watch)
    try:
        yield seen
    finally:
        sa.event.remove(engine, "before_cursor_execute", watch)


def views(runtime: EmbeddedRuntime) -> list[Any]:
    """The file page and its JSON at three windows, on a new app (empty caches)."""
    settings = Settings(redis_url="redis://unused", database_url=runtime.app.settings.database_url)
    out: list[Any] = []
    with TestClient(create_app(settings, covworker=runtime.app)) as client:
        for start in (1, 501, 1000):
            page = client.get(f"/{REPO}/commit/{SHA}/file/big.py", params={"from": start})
            api = client.get(f"/api/v1/repos/{REPO}/commits/{SHA}/files/big.py?from={start}")
            assert page.status_code == api.status_code == 200
            out += [page.text, api.json()]
        assert client.get(f"/{REPO}/commit/{SHA}/file/none.py").status_code == 404
    return out


def big_file(runtime: EmbeddedRuntime, upload: Upload) -> None:
    """One file of ``TOTAL`` lines with misses and partial branches, from two uploads."""
    first = {n: n % 3 for n in range(1, TOTAL + 1, 2)}
    second = {n: n % 4 for n in range(1, TOTAL + 1)}
    branches = {n: (n % 3, 2) for n in range(3, TOTAL, 7)}
    upload(
        REPO,
        SHA,
        {"a.info": lcov("big.py", first, branches), "b.info": lcov("big.py", second)},
    )


def test_the_file_page_of_a_version_with_stored_lines_never_reads_the_report(
    runtime: EmbeddedRuntime, upload: Upload, monkeypatch: pytest.MonkeyPatch
) -> None:
    big_file(runtime, upload)
    with runtime.app.services.sessions() as session:
        assert session.scalar(sa.select(sa.func.count()).select_from(ReportFileLines)) == 3

    def no_decoding(*args: object) -> None:
        raise AssertionError("the file page decoded the merged report")

    with monkeypatch.context() as patched, report_reads(runtime) as reads:
        patched.setattr(reports_module, "file_columns", no_decoding)
        stored = views(runtime)
    assert reads == []

    with runtime.app.services.sessions.begin() as session:  # as a version merged before
        session.execute(sa.update(CommitReport).values(lines_version=None))
    with report_reads(runtime) as reads:
        decoded = views(runtime)
    assert reads, "without stored lines the page reads the report (the watch can fail)"
    assert decoded == stored
    data = stored[1]
    assert data["window"] == {
        "from": 1,
        "to": 500,
        "instrumented_lines": TOTAL,
        "previous_from": None,
        "next_from": 501,
    }
    assert any(r["kind"] == "partial" for r in data["lines"])
    assert stored[3]["window"]["previous_from"] == 1
