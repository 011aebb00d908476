"""The figures every surface shows for a commit (app/figures.py): the base of
app.db.bases, the repository's rounding, unrounded beside displayed; on
fakeredis + SQLite."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest
import sqlalchemy as sa

from app.coverage.model import Totals
from app.db.bases import remember_pull
from app.db.models import Commit, Repository
from app.figures import (
    Headline,
    commit_headline,
    display_config,
    remember_fetched_yaml,
    stored_totals,
)
from app.ingest.accept import accept_uploads
from app.pullrequests.numbers import DisplayRounding
from tests.support.pipeline import Pipeline, unit_services

pytestmark = pytest.mark.timeout(60)

BASE, HEAD = "1" * 40, "2" * 40


@pytest.fixture
def steps(tmp_path: Path) -> Iterator[Pipeline]:
    services = unit_services(tmp_path)
    yield Pipeline(services)
    services.close()


def settle(steps: Pipeline, sha: str, hits: dict[int, int], **fields: object) -> Commit:
    lines = "".join(f"DA:{n},{c}\n" for n, c in hits.items())
    accepted = accept_uploads(
        steps.services, "acme/web", sha, [("a.info", f"SF:a.py\n{lines}end_of_record\n".encode())]
    )
    for upload_id in accepted.upload_ids:
        steps.process(upload_id)
    steps.finish(accepted.repoid, accepted.commitid)
    with steps.services.sessions.begin() as session:
        if fields:
            session.execute(sa.update(Commit).where(Commit.sha == sha).values(**fields))
        commit = session.get_one(Commit, accepted.commitid)
        session.expunge(commit)
    return commit


def test_the_rounding_is_the_head_files_else_the_stored_files_else_codecovs(
    steps: Pipeline,
) -> None:
    commit = settle(steps, BASE, {1: 1})
    with steps.services.sessions.begin() as session:
        assert display_config(session, commit.repository_id).round == "down"
        repo = session.get_one(Repository, commit.repository_id)
        repo.codecov_yaml = "coverage:\n  round: up\n"
        session.flush()
        assert display_config(session, repo.id).round == "up"
        remember_fetched_yaml(session, repo.id, "coverage:\n  round: nearest\n  precision: 1\n")
        config = display_config(session, repo.id)
        assert (config.round, config.precision) == ("nearest", 1)


def test_a_pull_requests_commit_is_compared_with_the_pulls_base_and_shown_rounded(
    steps: Pipeline,
) -> None:
    settle(steps, BASE, {1: 1, 2: 0, 3: 0}, branch="main")  # 33.33333 %
    head = settle(steps, HEAD, {1: 1, 2: 1, 3: 0}, branch="feature", pullid=7)  # 66.66667 %
    with steps.services.sessions.begin() as session:
        assert commit_headline(session, head).base is None  # no parent, no pull known
        remember_pull(
            session, head.repository_id, number=7, state="open", title="t", url="u",
            base_branch="main", base_sha=BASE, head_branch="feature", head_sha=HEAD,
        )  # fmt: skip
        shown = commit_headline(session, head).to_json()
    assert shown == {
        "coverage": 66.66667,
        "coverage_display": "66.66",
        "base_commit": BASE,
        "change": 33.33334,
        "change_display": "+33.33",
        "base_coverage": 33.33333,
        "base_coverage_display": "33.33",
        "rounding": {"precision": 2, "round": "down"},
    }


def test_a_commit_without_a_report_or_lines_shows_nothing_rather_than_zero() -> None:
    empty = Headline(DisplayRounding(), None, None, None)
    assert empty.to_json()["coverage_display"] is None and empty.change is None
    no_lines = Headline(DisplayRounding(), Totals(), None, None)
    assert no_lines.coverage is None
    assert stored_totals({}) is None
    assert stored_totals({"lines": 4, "hits": 3, "misses": 1, "coverage": 75.0}) == Totals(
        lines=4, hits=3, misses=1
    )
    assert Headline(DisplayRounding(0, "up"), Totals(1, 3, 2, 1), None, None).coverage == Decimal(
        "66.66667"
    )
