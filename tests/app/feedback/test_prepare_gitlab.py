"""A merge request on GitLab gets its statuses and its note: prepare, then deliver.

Real PostgreSQL and Redis, the real ``prepare`` and outbox; the provider is
the fake GitLab behind Prism (``openapi/gitlab.yaml``), and the project is in
a subgroup (``acme/platform/calc``: one URL-encoded path segment).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from app.db import pull_deliveries
from app.db.models import Commit, CommitReport, Repository
from app.feedback import delivery, rows
from app.feedback import prepare as preparing
from app.providers import CallCounter, Providers
from app.providers.gitlab import GitLab
from app.providers.http import ProviderHttp
from tests.support.fake_github import FakePull, PrismProxy, needs_prism, prism_proxy
from tests.support.fake_gitlab import GITLAB_SPEC, FakeGitLab
from tests.support.pipeline import Pipeline
from tests.support.synthetic import ci_matrix

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120), needs_prism]

PROJECT = "acme/platform/calc"
ENCODED = "/projects/acme%2Fplatform%2Fcalc"
BASE, HEAD = "b" * 40, "e" * 40
PATCH = "@@ -1,2 +1,4 @@\n line\n+added\n+added\n line\n"
YAML = b"coverage:\n  status:\n    patch:\n      default:\n        target: 90%\n"


@pytest.fixture
def gitlab(tmp_path: Path) -> Iterator[tuple[FakeGitLab, PrismProxy]]:
    with FakeGitLab() as fake, prism_proxy(GITLAB_SPEC, fake.url, tmp_path / "prism.log") as p:
        yield fake, p
        assert p.violations() == []


def settle(pipeline: Pipeline, sha: str, uploads: int, **fields: object) -> tuple[int, int]:
    """Upload, process, merge and notify ``sha``; its commit id and report version."""
    accepted = pipeline.upload(ci_matrix(uploads, files=1, lines=5), repo=PROJECT, sha=sha)
    with pipeline.services.sessions.begin() as session:
        session.execute(sa.update(Commit).where(Commit.sha == sha).values(**fields))
        session.execute(
            sa.update(Repository).where(Repository.name == PROJECT).values(service="gitlab")
        )
    for u in accepted.upload_ids:
        pipeline.process(u)
    pipeline.finish(accepted.repoid, accepted.commitid)
    pipeline.notify(accepted.repoid, accepted.commitid)
    with pipeline.services.sessions() as session:
        version = session.scalar(
            sa.select(CommitReport.version).where(CommitReport.commit_id == accepted.commitid)
        )
    assert version
    return accepted.commitid, version


def deliver_version(
    pipeline: Pipeline, found: Providers, commit_id: int, version: int
) -> list[rows.Attempt]:
    """The version's prepare row through the real ``prepare``, then every row it wrote."""
    prepare_id = rows.enqueue_prepare(pipeline.services, commit_id, version)
    assert prepare_id is not None
    first = delivery.deliver(pipeline.services, found, prepare_id, preparing.prepare)
    return [first] + [
        delivery.deliver(pipeline.services, found, row, preparing.prepare)
        for row in first.followups
    ]


def test_a_subgroup_merge_request_gets_its_statuses_and_one_note_edited_in_place(
    real_pipeline: Pipeline, gitlab: tuple[FakeGitLab, PrismProxy], monkeypatch: pytest.MonkeyPatch
) -> None:
    fake, proxy = gitlab
    settle(real_pipeline, BASE, 1, branch="main")
    head_id, version = settle(real_pipeline, HEAD, 2, branch="feature", pullid=7)
    fake.add_pull(PROJECT, FakePull(7, BASE, "main", HEAD, "feature"))
    fake.add_diff(
        PROJECT,
        BASE,
        HEAD,
        [("src/pkg/module_000.py", "modified", PATCH), ("assets/big.csv", "added", None)],
    )
    fake.add_file(PROJECT, HEAD, "codecov.yml", YAML)
    counter = CallCounter()
    http = ProviderHttp(proxy.url, timeout_s=10, counter=counter)
    found = Providers({"gitlab": GitLab(http, "glpat-test")}, counter)
    monkeypatch.setattr(real_pipeline.services.settings, "public_url", "https://cov.example")

    attempts = deliver_version(real_pipeline, found, head_id, version)

    assert [a.state for a in attempts] == ["sent"] * 4
    with real_pipeline.services.sessions() as session:
        feedback = pull_deliveries.commit_feedback(session, head_id)
    assert feedback is not None
    info = feedback["info"]
    assert info["pull"]["number"] == 7 and info["pull"]["base_branch"] == "main"
    assert info["pull"]["url"] == f"https://gitlab.example/{PROJECT}/-/merge_requests/7"
    assert info["base"] == BASE
    assert info["not_measured"] == ["assets/big.csv"]

    # The statuses, as GitLab names them (name, state), on the head commit only.
    sent = fake.state.statuses[(PROJECT, HEAD)]
    assert [s["name"] for s in sent] == ["codecov/project", "codecov/patch"]
    target_url = f"https://cov.example/{PROJECT}/commit/{HEAD}"
    assert all(s["target_url"] == target_url for s in sent)
    # ci_matrix's file has 5 lines, 4 hit at base and head; the diff adds
    # lines 2 and 3, one of them missed: patch 50% against codecov.yml's 90%.
    assert [(s["state"], s["description"]) for s in sent] == [
        ("success", f"80.00% (+0.00%) compared to {BASE[:7]}"),
        ("failed", "50.00% of diff hit (target 90.00%)"),  # GitLab's word for failure
    ]
    assert (PROJECT, BASE) not in fake.state.statuses

    # One note on merge request !7 of the subgroup project, with the diff's numbers.
    notes = fake.comments_on(PROJECT, 7)
    assert len(notes) == 1
    (note,) = notes.values()
    assert note.startswith(f"## [Codecov]({target_url}) Report") and "Coverage Diff" in note
    assert "merge_requests/7)" not in note  # no link back to the merge request itself
    assert ":x: Patch coverage is `50.00%` with `1 line` in your changes" in note
    assert "Coverage   80.00%   80.00%" in note
    assert "`assets/big.csv`" in note  # the file GitLab gave no diff for, named
    posts = fake.calls("POST", f"{ENCODED}/merge_requests/7/notes")
    assert len(posts) == 1
    assert fake.calls("GET", f"{ENCODED}/merge_requests/7")  # by its iid, -P 7
    assert fake.calls("GET", f"{ENCODED}/repository/compare")
    assert len(fake.calls("POST", f"{ENCODED}/statuses/{HEAD}")) == 2

    # A newer version edits the note in place (PUT), never adds a second one.
    fake.add_diff(
        PROJECT,
        BASE,
        HEAD,
        [("src/pkg/module_000.py", "modified", PATCH.replace("+added\n", "+x\n", 1))],
    )
    again = deliver_version(real_pipeline, found, head_id, version + 1)
    assert [a.state for a in again] == ["sent"] * 4
    assert len(fake.state.statuses[(PROJECT, HEAD)]) == 2  # identical statuses: not sent again
    assert len(fake.calls("POST", f"{ENCODED}/merge_requests/7/notes")) == 1
    (comment_id,) = notes
    assert fake.calls("PUT", f"{ENCODED}/merge_requests/7/notes/{comment_id}")
    edited = fake.comments_on(PROJECT, 7)
    assert list(edited) == [comment_id] and "assets/big.csv" not in edited[comment_id]
    assert proxy.warnings() == []
