"""Read-only views of a commit (``covworker status``, ``report``, ``commits``)
and the change against its base, read from a pipeline run on fakeredis + SQLite."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from app.coverage import Totals
from app.db.bases import remember_pull
from app.db.models import Commit, CommitReport, UploadState
from app.errors import AmbiguousCommit, CommitNotFound, InvalidUpload
from app.ingest.accept import accept_uploads
from app.queries import (
    commit_delta,
    commit_report,
    commit_status,
    flag_totals,
    report_version,
    repository_commits,
    resolve_commit,
    totals_json,
    upload_states,
)
from tests.support.pipeline import Pipeline, unit_services

pytestmark = pytest.mark.timeout(60)

SHA = "abc1234" + "0" * 33


def lcov(path: str, hits: dict[int, int]) -> bytes:
    lines = "".join(f"DA:{line},{count}\n" for line, count in hits.items())
    return f"SF:{path}\n{lines}end_of_record\n".encode()


@pytest.fixture
def steps(tmp_path: Path) -> Iterator[Pipeline]:
    services = unit_services(tmp_path)
    yield Pipeline(services)
    services.close()


def settle(
    steps: Pipeline, sha: str, reports: list[tuple[str, bytes]], flags: list[str] | None = None
) -> int:
    """Upload, process and merge ``reports`` as one commit of acme/web; its id."""
    accepted = accept_uploads(steps.services, "acme/web", sha, reports, flags)
    for upload_id in accepted.upload_ids:
        steps.process(upload_id)
    steps.finish(accepted.repoid, accepted.commitid)
    return accepted.commitid


def test_a_commit_is_found_by_its_sha_or_a_unique_prefix_of_any_case(
    steps: Pipeline,
) -> None:
    settle(steps, SHA, [("a.info", lcov("a.py", {1: 1}))])
    with steps.services.sessions() as session:
        assert resolve_commit(session, "Acme/Web", SHA).sha == SHA
        assert resolve_commit(session, "acme/web", "ABC1234").sha == SHA


def test_an_unknown_commit_or_a_short_sha_is_refused(steps: Pipeline) -> None:
    settle(steps, SHA, [("a.info", lcov("a.py", {1: 1}))])
    with steps.services.sessions() as session:
        with pytest.raises(CommitNotFound, match="commit fffffff of acme/web is unknown"):
            resolve_commit(session, "acme/web", "fffffff")
        with pytest.raises(CommitNotFound):
            resolve_commit(session, "acme/other", SHA)
        with pytest.raises(InvalidUpload, match="not a hex SHA"):
            resolve_commit(session, "acme/web", "abc")


def test_an_ambiguous_prefix_lists_the_commits_it_matches_but_a_full_sha_never_is(
    steps: Pipeline,
) -> None:
    other = "abc1234" + "f" * 33
    settle(steps, SHA, [("a.info", lcov("a.py", {1: 1}))])
    settle(steps, other, [("a.info", lcov("a.py", {1: 0}))])
    with steps.services.sessions() as session:
        with pytest.raises(AmbiguousCommit) as raised:
            resolve_commit(session, "acme/web", "abc1234")
        assert raised.value.candidates == [SHA, other]
        assert resolve_commit(session, "acme/web", other).sha == other


def test_a_full_sha_that_starts_another_commits_sha_names_itself(steps: Pipeline) -> None:
    longer = SHA + "e" * 24  # a SHA-256 commit whose first 40 digits are a SHA-1 commit's
    settle(steps, SHA, [("a.info", lcov("a.py", {1: 1}))])
    settle(steps, longer, [("a.info", lcov("a.py", {1: 0}))])
    with steps.services.sessions() as session:
        assert resolve_commit(session, "acme/web", SHA).sha == SHA


def test_totals_without_lines_have_no_percentage() -> None:
    assert totals_json(Totals())["coverage"] is None
    found = totals_json(Totals(files=1, lines=4, hits=3, misses=1))
    assert (found["coverage"], found["lines"]) == (75.0, 4)


def test_the_status_counts_uploads_by_state_and_names_the_broken_ones(
    steps: Pipeline,
) -> None:
    commitid = settle(
        steps,
        SHA,
        [("a.info", lcov("a.py", {1: 1, 2: 0})), ("broken.xml", b"<coverage")],
        flags=["unit"],
    )
    status = commit_status(steps.services, "ACME/web", SHA[:7])
    assert (status["repository"], status["commit"], status["commitid"]) == (
        "acme/web",
        SHA,
        commitid,
    )
    assert status["uploads"] == {**{s.value: 0 for s in UploadState}, "merged": 1, "error": 1}
    assert upload_states(steps.services, commitid) == status["uploads"]
    assert [e["file"] for e in status["errors"]] == ["broken.xml"]
    assert status["report_version"] == 1
    assert status["flags"]["unit"]["lines"] == 2
    assert status["redis"] == {"processing": 0, "processed": 0}


def test_the_report_holds_the_merged_totals_per_file_and_per_flag(steps: Pipeline) -> None:
    services = steps.services
    unit = accept_uploads(
        services, "acme/web", SHA, [("u.info", lcov("a.py", {1: 1, 2: 0}))], ["unit"]
    )
    e2e = accept_uploads(services, "acme/web", SHA, [("e.info", lcov("b.py", {1: 1}))], ["e2e"])
    for upload_id in unit.upload_ids + e2e.upload_ids:
        steps.process(upload_id)
    steps.finish(unit.repoid, unit.commitid)
    report = commit_report(services, "acme/web", SHA)
    assert report["totals"]["lines"] == 3 and report["totals"]["hits"] == 2
    assert set(report["files"]) == {"a.py", "b.py"}
    assert "files" not in report["files"]["a.py"]
    assert sorted(report["upload_ids"]) == sorted(unit.upload_ids + e2e.upload_ids)
    only_unit = commit_report(services, "acme/web", SHA, flag="unit")
    assert set(only_unit["files"]) == {"a.py"}
    assert only_unit["upload_ids"] == unit.upload_ids
    with services.sessions() as session:
        assert report_version(session, unit.commitid) == 1
        assert report_version(session, 10_000) == 0
        assert flag_totals(session, unit.commitid) == {
            "e2e": Totals(files=1, lines=1, hits=1),
            "unit": Totals(files=1, lines=2, hits=1, misses=1),
        }


def test_the_commits_of_a_repository_come_newest_first_with_their_coverage(
    steps: Pipeline,
) -> None:
    older, newer = "1" * 40, "2" * 40
    settle(steps, older, [("a.info", lcov("a.py", {1: 1, 2: 0}))])
    settle(steps, newer, [("a.info", lcov("a.py", {1: 1}))])
    listed = repository_commits(steps.services, "Acme/Web")
    assert listed["repository"] == "acme/web"
    assert [(c["commit"], c["coverage"]) for c in listed["commits"]] == [
        (newer, 100.0),
        (older, 50.0),
    ]
    assert listed["commits"][0]["uploads"]["merged"] == 1
    assert len(repository_commits(steps.services, "acme/web", limit=1)["commits"]) == 1
    with pytest.raises(CommitNotFound, match="repository acme/none is unknown"):
        repository_commits(steps.services, "acme/none")


def test_the_delta_is_the_comparison_the_merge_stored_when_its_base_is_the_same(
    steps: Pipeline,
) -> None:
    commitid = settle(steps, SHA, [("a.info", lcov("a.py", {1: 1, 2: 0}))])
    with steps.services.sessions.begin() as session:
        # Only the stored comparison is left to read: it is what the delta says.
        session.execute(
            sa.update(CommitReport)
            .where(CommitReport.commit_id == commitid)
            .values(report=b"not a report", file_totals=b"not a report")
        )
        commit = session.get_one(Commit, commitid)
        delta = commit_delta(session, commit)
    assert "error" not in delta
    assert delta["head"]["lines"] == 2 and delta["base_commit"] is None


def test_the_delta_of_a_commit_is_against_its_base(steps: Pipeline) -> None:
    base, head = "1" * 40, "2" * 40
    settle(steps, base, [("a.info", lcov("a.py", {1: 1, 2: 0}))])
    settle(steps, head, [("a.info", lcov("a.py", {1: 1, 2: 1}))])
    with steps.services.sessions.begin() as session:
        commit = session.scalar(sa.select(Commit).where(Commit.sha == head))
        assert commit is not None
        commit.parent_commit_id = base
        session.flush()
        delta = commit_delta(session, commit)
    assert delta["base_commit"] == base
    assert delta["change"] == pytest.approx(50.0)


def test_a_report_that_cannot_be_read_gives_a_delta_naming_why(steps: Pipeline) -> None:
    commitid = settle(steps, SHA, [("a.info", lcov("a.py", {1: 1}))])
    with steps.services.sessions.begin() as session:
        session.execute(
            sa.update(CommitReport)
            .where(CommitReport.commit_id == commitid)
            # nor the comparison its merge stored, which would spare reading it
            .values(report=b"not a report", file_totals=b"not a report", comparison=None)
        )
        commit = session.get(Commit, commitid)
        assert commit is not None
        delta = commit_delta(session, commit)
    assert delta["base_commit"] is None and delta["change"] is None
    assert delta["error"]


def lcov_partials(path: str, lines: int, partial: int) -> bytes:
    """``lines`` lines all run, the first ``partial`` of them with one of two branches."""
    brda = "".join(f"BRDA:{n},0,0,1\nBRDA:{n},0,1,0\n" for n in range(1, partial + 1))
    da = "".join(f"DA:{n},1\n" for n in range(1, lines + 1))
    return f"SF:{path}\n{brda}{da}end_of_record\n".encode()


def test_report_status_and_commits_show_the_pull_requests_base_and_the_displayed_figure(
    steps: Pipeline,
) -> None:
    base, head = "1" * 40, "2" * 40
    settle(steps, base, [("a.info", lcov("src/big.py", {1: 1, 2: 0}))])
    head_id = settle(steps, head, [("a.info", lcov_partials("src/big.py", 2183, 9))])
    with steps.services.sessions.begin() as session:
        # Uploaded as the Codecov Action does: branch and pull request, no parent.
        session.execute(sa.update(Commit).where(Commit.sha == base).values(branch="main"))
        session.execute(
            sa.update(Commit).where(Commit.id == head_id).values(branch="feature", pullid=7)
        )
        repoid = session.scalar(sa.select(Commit.repository_id).where(Commit.id == head_id))
        assert repoid is not None
    services = steps.services
    assert commit_status(services, "acme/web", head)["base_commit"] is None  # no pull known
    with services.sessions.begin() as session:
        remember_pull(
            session, repoid, number=7, state="open", title="t", url="u",
            base_branch="main", base_sha=base, head_branch="feature", head_sha=head,
        )  # fmt: skip
    status = commit_status(services, "acme/web", head)
    report = commit_report(services, "acme/web", head)
    (row, _) = repository_commits(services, "acme/web")["commits"]
    for shown in (status, report, row):
        assert shown["base_commit"] == base
        assert shown["change_display"] == "+49.58"  # 99.58772 - 50
    assert (status["coverage"], status["coverage_display"]) == (99.58772, "99.58")
    assert (row["coverage"], row["coverage_display"]) == (99.58772, "99.58")
    assert report["totals"]["coverage"] == 99.58772
    assert report["totals"]["coverage_display"] == "99.58"
    assert report["rounding"] == status["rounding"] == {"precision": 2, "round": "down"}
