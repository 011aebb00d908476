"""The pages read the per-file totals and the comparison the merge stored
(``app.merge.report_summary``), and show exactly what they computed from the
reports before; a version merged without them still renders."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from app.api import create_app
from app.coverage import codec
from app.db.models import Commit, CommitReport
from app.embedded import EmbeddedRuntime
from app.merge.report_summary import decode_file_totals, stored_comparison
from app.pullrequests.cached_totals import report_change
from app.settings import Settings
from app.web.queries import report_version
from tests.app.web.conftest import Upload, commit_before_its_uploads, lcov

pytestmark = pytest.mark.timeout(120)

SHA1, SHA2 = "1" * 40, "2" * 40
REPO = "acme/summary"


def random_lcov(rng: random.Random, files: int) -> str:
    """Several files with misses, hits and partially covered branch lines."""
    out = []
    for f in range(files):
        if rng.random() < 0.2:
            continue  # files differ between uploads and commits
        lines = rng.randint(1, 30)
        hits = {ln: rng.choice((0, 0, 1, 3)) for ln in range(1, lines + 1) if rng.random() < 0.9}
        branches = {ln: (rng.randint(0, 2), 2) for ln in hits if ln % 4 == 0}
        out.append(lcov(f"src/m{f:02}.py", hits, branches))
    return "".join(out) or lcov("src/only.py", {1: 1})


def fresh_client(runtime: EmbeddedRuntime) -> Iterator[TestClient]:
    """A new app, so nothing is cached from an earlier request."""
    settings = Settings(redis_url="redis://unused", database_url=runtime.app.settings.database_url)
    with TestClient(create_app(settings, covworker=runtime.app)) as client:
        yield client


def pages(runtime: EmbeddedRuntime, sha: str) -> tuple[dict[str, Any], str, dict[str, Any]]:
    """The commit JSON, the commit page and a sorted JSON view, on a cold cache."""
    for client in fresh_client(runtime):
        data = client.get(f"/api/v1/repos/{REPO}/commits/{sha}").json()
        html = client.get(f"/{REPO}/commit/{sha}?sort=change&order=desc").text
        by_change = client.get(f"/api/v1/repos/{REPO}/commits/{sha}?sort=change&page=2").json()
    return data, html, by_change


def row_of(runtime: EmbeddedRuntime, sha: str) -> tuple[int, CommitReport]:
    with runtime.app.services.sessions() as session:
        commit_id = session.scalar(sa.select(Commit.id).where(Commit.sha == sha))
        row = session.scalar(
            sa.select(CommitReport)
            .where(CommitReport.commit_id == commit_id)
            .options(sa.orm.undefer(CommitReport.report), sa.orm.undefer(CommitReport.file_totals))
            .options(sa.orm.undefer(CommitReport.comparison))
        )
        assert commit_id is not None and row is not None
        session.expunge(row)
    return commit_id, row


def forget_summaries(runtime: EmbeddedRuntime) -> None:
    """As a version merged before the summaries existed."""
    with runtime.app.services.sessions.begin() as session:
        session.execute(sa.update(CommitReport).values(file_totals=None, comparison=None))


def two_commits(runtime: EmbeddedRuntime, upload: Upload, seed: int) -> None:
    """A base and a head naming it as parent (as the front door stores it,
    before its uploads), each merged from three random uploads."""
    rng = random.Random(seed)
    upload(REPO, SHA1, {f"u{i}.info": random_lcov(rng, 40) for i in range(3)}, branch="main")
    commit_before_its_uploads(runtime, SHA2, parent=SHA1)
    upload(
        REPO,
        SHA2,
        {f"u{i}.info": random_lcov(rng, 40) for i in range(3)},
        branch="main",
        parent=SHA1,
    )


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_stored_file_totals_and_comparison_equal_those_computed_from_the_reports(
    runtime: EmbeddedRuntime, upload: Upload, seed: int
) -> None:
    two_commits(runtime, upload, seed)
    base_id, base_row = row_of(runtime, SHA1)
    head_id, head_row = row_of(runtime, SHA2)
    assert base_row.report and head_row.report and head_row.file_totals
    base_report, head_report = (
        codec.load(base_row.report),
        codec.load(head_row.report),
    )
    stored = decode_file_totals(head_row.file_totals)
    assert stored == head_report.file_totals()
    assert list(stored) == list(head_report.file_totals())  # same order: sorted by path
    with runtime.app.services.sessions() as session:
        comparison = stored_comparison(
            session, head_id, head_row.version, base_id, report_version(session, base_id)
        )
    assert comparison is not None, "the stored comparison is for the base the page finds"
    assert comparison == report_change(base_report, head_report)


@pytest.mark.parametrize("seed", [4, 5])
def test_the_pages_show_the_same_with_the_stored_summary_and_without_it(
    runtime: EmbeddedRuntime, upload: Upload, seed: int
) -> None:
    two_commits(runtime, upload, seed)
    with_summary = pages(runtime, SHA2)
    assert with_summary[0]["base"]["commit"] == SHA1
    assert with_summary[0]["base"]["files_changed"] > 0
    forget_summaries(runtime)
    _, row = row_of(runtime, SHA2)
    assert row.file_totals is None and row.comparison is None
    assert pages(runtime, SHA2) == with_summary  # a version merged before still renders


def test_a_base_merged_again_after_the_head_is_compared_at_its_new_version(
    runtime: EmbeddedRuntime, upload: Upload
) -> None:
    two_commits(runtime, upload, 6)
    upload(REPO, SHA1, {"late.info": lcov("src/late.py", {1: 0, 2: 0})}, branch="main")
    base_id, base_row = row_of(runtime, SHA1)
    head_id, head_row = row_of(runtime, SHA2)
    with runtime.app.services.sessions() as session:
        base_version = report_version(session, base_id)
        assert stored_comparison(session, head_id, head_row.version, base_id, base_version) is None
    data, _, _ = pages(runtime, SHA2)
    assert base_row.report and head_row.report and head_row.comparison
    expected = report_change(codec.load(base_row.report), codec.load(head_row.report))
    assert expected != head_row.comparison["result"], "the late upload changed the comparison"
    assert data["base"]["totals"] == expected["base"]
    assert data["base"]["change"] == expected["change"]
    assert data["base"]["files_changed"] == expected["files_changed"]
    assert data["base"]["top_files"] == expected["top_files"]
