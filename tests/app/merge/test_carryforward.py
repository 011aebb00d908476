"""Carryforward through the real merge: flags carried from an ancestor, replaced by an upload.

Runs the production finisher on fakeredis + SQLite and on real Redis + PostgreSQL
(the head's own codecov.yml: real Redis + PostgreSQL and the fake GitHub behind Prism).
"""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from app.coverage import codec, parse_report
from app.coverage.columnar import Accumulator, Part
from app.db.models import (
    Commit,
    CommitFlagReport,
    CommitReport,
    Notification,
    Repository,
    UploadState,
)
from app.ingest.accept import Accepted, accept_uploads
from app.merge import commit_yaml
from app.merge.carryforward import HeadYaml, _parsed_small, commit_config
from app.merge.file_lines import read_window
from app.providers import CallCounter, Providers
from app.providers.github import GitHub, TokenAuth
from app.providers.http import ProviderHttp
from app.pullrequests.carryforward import MAX_ANCESTORS
from app.pullrequests.config import MAX_YAML_BYTES
from app.queries import commit_status
from tests.support.fake_github import FakeGitHub, PrismProxy, needs_prism
from tests.support.pipeline import Pipeline
from tests.support.testresults import junit, upload_tests

pytestmark = pytest.mark.timeout(120)

YAML = """
flags:
  ui:
    carryforward: true
    paths: [web/]
  unit:
    carryforward: true
  e2e:
    carryforward: false
"""


def lcov(files: dict[str, dict[int, int]]) -> bytes:
    out = []
    for path, lines in files.items():
        out.append(f"SF:{path}")
        out += [f"DA:{ln},{n}" for ln, n in lines.items()]
        out.append("end_of_record")
    return ("\n".join(out) + "\n").encode()


UNIT_P = lcov({"core/a.py": {1: 1, 2: 0, 3: 1}})
UI_P = lcov({"web/app.js": {1: 1, 2: 1}, "core/a.py": {2: 1}})  # core/a.py is outside ui's paths
E2E_P = lcov({"core/e.py": {1: 1}})
UNIT_C = lcov({"core/a.py": {1: 1, 2: 1, 3: 0}})
UI_C = lcov({"web/app.js": {1: 0, 2: 0, 3: 1}})


def sha(c: str) -> str:
    return c * 40


def settle(
    pipeline: Pipeline,
    commit_sha: str,
    parent: str | None,
    *uploads: tuple[str, bytes],
    **fields: object,
) -> tuple[int, int]:
    """Upload each (flag, report) to the commit, with its parent (and ``fields``,
    e.g. its branch) set, process and merge."""
    ids: list[int] = []
    repoid = commitid = 0
    for flag, raw in uploads:
        accepted = _upload(pipeline, commit_sha, flag, raw)
        repoid, commitid = accepted.repoid, accepted.commitid
        ids += accepted.upload_ids
    with pipeline.services.sessions.begin() as session:
        session.execute(
            sa.update(Commit).where(Commit.id == commitid).values(parent_commit_id=parent, **fields)
        )
    for upload_id in ids:
        assert pipeline.process(upload_id) == UploadState.PROCESSED
    pipeline.finish(repoid, commitid)
    return repoid, commitid


def _upload(pipeline: Pipeline, commit_sha: str, flag: str, raw: bytes) -> Accepted:
    return accept_uploads(
        pipeline.services, "acme/web", commit_sha, [(f"{flag}.lcov", raw)], [flag]
    )


def set_yaml(pipeline: Pipeline, text: str) -> None:
    with pipeline.services.sessions.begin() as session:
        assert session.execute(sa.update(Repository).values(codecov_yaml=text)).rowcount == 1


def flag_rows(pipeline: Pipeline, commitid: int) -> dict[str, tuple[str | None, int, bytes | None]]:
    with pipeline.services.sessions() as session:
        rows = session.execute(
            sa.select(
                CommitFlagReport.flag,
                CommitFlagReport.carried_from,
                CommitFlagReport.uploads,
                CommitFlagReport.report,
            ).where(CommitFlagReport.commit_id == commitid)
        ).all()
    return {r.flag: (r.carried_from, r.uploads, r.report) for r in rows}


def commit_report(
    pipeline: Pipeline, commitid: int
) -> tuple[bytes, dict[str, float], bytes | None]:
    with pipeline.services.sessions() as session:
        row = session.execute(
            sa.select(CommitReport.report, CommitReport.totals, CommitReport.uploaded_report).where(
                CommitReport.commit_id == commitid
            )
        ).one()
    return row.report, row.totals, row.uploaded_report


def merged(*raws: bytes) -> Accumulator:
    acc = Accumulator()
    for raw in raws:
        acc.add(Part.from_report(parse_report(raw)))
    return acc


def test_a_flag_no_upload_names_is_carried_and_counted_then_replaced_by_an_upload(
    pipeline: Pipeline,
) -> None:
    _, parent = settle(pipeline, sha("b"), None, ("unit", UNIT_P), ("ui", UI_P), ("e2e", E2E_P))
    set_yaml(pipeline, YAML)
    repoid, child = settle(pipeline, sha("c"), sha("b"), ("unit", UNIT_C))

    rows = flag_rows(pipeline, child)
    # ui carried from the parent (only its paths), e2e not (carryforward: false), unit uploaded
    assert set(rows) == {"unit", "ui"}
    carried_from, uploads, report = rows["ui"]
    assert (carried_from, uploads) == (sha("b"), 0)
    assert report is not None
    assert (
        codec.load_part(report).to_report()
        == merged(lcov({"web/app.js": {1: 1, 2: 1}})).to_report()
    )
    assert rows["unit"][:2] == (None, 1)
    report, totals, own = commit_report(pipeline, child)
    expected = merged(UNIT_C, lcov({"web/app.js": {1: 1, 2: 1}}))
    assert codec.load_part(report).to_report() == expected.to_report()
    assert totals == expected.totals().to_dict()
    assert own is not None and codec.load_part(own).to_report() == merged(UNIT_C).to_report()
    with pipeline.services.sessions() as session:  # the file page's windows: of what is stored
        version = session.scalar(
            sa.select(CommitReport.lines_version).where(CommitReport.commit_id == child)
        )
        assert version is not None
        window = read_window(session, child, version, "web/app.js", 1, 500)
    assert window is not None and (list(window.lines), list(window.hits)) == ([1, 2], [1, 1])
    # shown as carried forward: the status JSON and the notification's comparison
    status = commit_status(pipeline.services, "acme/web", sha("c"))
    assert status["flags"]["ui"]["carried_from"] == sha("b")
    assert status["flags"]["unit"]["carried_from"] is None
    pipeline.notify(repoid, child)
    with pipeline.services.sessions() as session:
        comparison = session.scalar(
            sa.select(Notification.comparison).where(Notification.commit_id == child)
        )
    assert comparison is not None
    assert comparison["flags"]["ui"]["carried_from"] == sha("b")
    assert comparison["base_commit"] == sha("b")

    # an upload of ui replaces the carried ui coverage (not added to it)
    accepted = _upload(pipeline, sha("c"), "ui", UI_C)
    assert pipeline.process(accepted.upload_ids[0]) == UploadState.PROCESSED
    pipeline.finish(repoid, child)
    rows = flag_rows(pipeline, child)
    assert rows["ui"][:2] == (None, 1)
    assert codec.load_part(rows["ui"][2]).to_report() == merged(UI_C).to_report()  # type: ignore[arg-type]
    report, totals, own = commit_report(pipeline, child)
    assert codec.load_part(report).to_report() == merged(UNIT_C, UI_C).to_report()
    assert totals == merged(UNIT_C, UI_C).totals().to_dict()
    assert own is None
    del parent


def test_an_upload_without_a_parent_sha_carries_from_its_branch_else_the_default_branch(
    pipeline: Pipeline,
) -> None:
    # As the Codecov GitHub Action uploads: -B <branch> -P <pull>, no parent SHA.
    settle(pipeline, sha("1"), None, ("unit", UNIT_P), ("ui", UI_P), branch="main")
    set_yaml(pipeline, YAML)
    # a settled commit of another branch is no candidate
    settle(pipeline, sha("2"), None, ("unit", UNIT_P), ("ui", UI_C), branch="other")
    # the pull request's first push: nothing earlier on its branch, so the default branch's
    _, first = settle(pipeline, sha("3"), None, ("unit", UNIT_C), branch="feature", pullid=7)
    assert flag_rows(pipeline, first)["ui"][:2] == (sha("1"), 0)
    # its next push: the branch's newest settled commit before it
    _, second = settle(pipeline, sha("4"), None, ("unit", UNIT_C), branch="feature", pullid=7)
    carried_from, uploads, report = flag_rows(pipeline, second)["ui"]
    assert (carried_from, uploads) == (sha("3"), 0)
    assert report is not None
    assert (
        codec.load_part(report).to_report()
        == merged(lcov({"web/app.js": {1: 1, 2: 1}})).to_report()
    )
    status = commit_status(pipeline.services, "acme/web", sha("4"))
    assert status["flags"]["ui"]["carried_from"] == sha("3")


def test_without_a_parent_sha_a_named_default_branch_is_used_not_one_uploaded_later(
    pipeline: Pipeline,
) -> None:
    settle(pipeline, sha("1"), None, ("unit", UNIT_P), ("ui", UI_P), branch="develop")
    set_yaml(pipeline, YAML)
    with pipeline.services.sessions.begin() as session:
        session.execute(sa.update(Repository).values(default_branch="develop"))
    # uploaded before develop's next commit, merged after it settled
    early = _upload(pipeline, sha("2"), "unit", UNIT_C)
    with pipeline.services.sessions.begin() as session:
        session.execute(
            sa.update(Commit).where(Commit.id == early.commitid).values(branch="feature")
        )
    settle(pipeline, sha("3"), sha("1"), ("unit", UNIT_P), ("ui", UI_C), branch="develop")
    assert pipeline.process(early.upload_ids[0]) == UploadState.PROCESSED
    pipeline.finish(early.repoid, early.commitid)
    assert flag_rows(pipeline, early.commitid)["ui"][:2] == (sha("1"), 0)
    # no settled commit on its branch or the default branch: nothing carried
    with pipeline.services.sessions.begin() as session:
        session.execute(sa.update(Repository).values(default_branch="release"))
    _, lone = settle(pipeline, sha("5"), None, ("unit", UNIT_C), branch="hotfix")
    assert set(flag_rows(pipeline, lone)) == {"unit"}


def test_the_nearest_settled_ancestor_with_the_flag_is_used_and_chains_carry_on(
    pipeline: Pipeline,
) -> None:
    settle(pipeline, sha("1"), None, ("unit", UNIT_P), ("ui", UI_P))
    set_yaml(pipeline, YAML)  # the repository exists now
    settle(pipeline, sha("2"), sha("1"), ("unit", UNIT_C))  # carries ui from 1
    # 3 has an upload still in flight: not settled, so it is skipped
    pending = _upload(pipeline, sha("3"), "ui", UI_C)
    with pipeline.services.sessions.begin() as session:
        session.execute(
            sa.update(Commit).where(Commit.id == pending.commitid).values(parent_commit_id=sha("2"))
        )
    _, child = settle(pipeline, sha("4"), sha("3"), ("unit", UNIT_C))
    carried_from, _, report = flag_rows(pipeline, child)["ui"]
    assert carried_from == sha("2")  # the nearest settled one; its ui was itself carried
    assert (
        codec.load_part(report).to_report()
        == merged(  # type: ignore[arg-type]
            lcov({"web/app.js": {1: 1, 2: 1}})
        ).to_report()
    )


def test_nothing_is_carried_beyond_ten_first_parents_or_without_carryforward(
    pipeline: Pipeline,
) -> None:
    settle(pipeline, sha("0"), None, ("unit", UNIT_P), ("ui", UI_P))
    parent = sha("0")
    for i in range(1, MAX_ANCESTORS + 1):  # ten commits without ui between
        child_sha = f"{i:040x}"
        settle(pipeline, child_sha, parent, ("unit", UNIT_C))
        parent = child_sha
    set_yaml(pipeline, YAML)
    _, far = settle(pipeline, sha("f"), parent, ("unit", UNIT_C))
    assert set(flag_rows(pipeline, far)) == {"unit"}
    set_yaml(pipeline, "flags:\n  ui:\n    carryforward: false\n")
    _, near = settle(pipeline, sha("e"), sha("0"), ("unit", UNIT_C))
    assert set(flag_rows(pipeline, near)) == {"unit"}


@pytest.mark.integration
@needs_prism
def test_the_head_commits_own_codecov_yml_decides_what_is_carried(
    real_pipeline: Pipeline, github: tuple[FakeGitHub, PrismProxy]
) -> None:
    fake, proxy = github
    pipeline = real_pipeline
    settle(pipeline, sha("0"), None, ("unit", UNIT_P), ("ui", UI_P))
    set_yaml(pipeline, "flags:\n  ui:\n    carryforward: false\n")  # the stored file says no
    counter = CallCounter()
    http = ProviderHttp(proxy.url, timeout_s=10, counter=counter)
    pipeline.services.providers = Providers({"github": GitHub(http, TokenAuth("t"))}, counter)
    fake.add_file("acme/web", sha("1"), ".github/codecov.yml", YAML.encode())

    _, child = settle(pipeline, sha("1"), sha("0"), ("unit", UNIT_C))

    assert flag_rows(pipeline, child)["ui"][0] == sha("0")  # the head's file carried it
    _, totals, _ = commit_report(pipeline, child)
    assert totals == merged(UNIT_C, lcov({"web/app.js": {1: 1, 2: 1}})).totals().to_dict()
    # read before the merge, once, and cached for the notification's read
    reads = len(fake.calls("GET", "/contents/"))
    assert reads == 12
    repo = prfeedback_repository(pipeline)
    assert (
        commit_yaml.load_yaml(
            pipeline.services,
            pipeline.services.providers.by_service["github"],
            repo,
            sha("1"),
            commit_yaml.lookups(),
        )
        == YAML
    )
    assert len(fake.calls("GET", "/contents/")) == reads
    # another commit without a file of its own: the stored one applies, not the last read
    _, other = settle(pipeline, sha("2"), sha("0"), ("unit", UNIT_C))
    assert set(flag_rows(pipeline, other)) == {"unit"}
    # the provider failing: the stored file applies, the merge goes on
    set_yaml(pipeline, YAML)
    fake.fail("GET", r".*/contents/.*", *([500] * 12))
    _, third = settle(pipeline, sha("3"), sha("0"), ("unit", UNIT_C))
    assert flag_rows(pipeline, third)["ui"][0] == sha("0")


def prfeedback_repository(pipeline: Pipeline) -> Repository:
    with pipeline.services.sessions() as session:
        repo = session.scalars(sa.select(Repository).where(Repository.name == "acme/web")).one()
        session.expunge(repo)
    return repo


def test_a_carried_flag_stays_counted_once_when_its_replacing_uploads_intermediate_is_lost(
    pipeline: Pipeline,
) -> None:
    _, parent = settle(pipeline, sha("b"), None, ("unit", UNIT_P), ("ui", UI_P))
    set_yaml(pipeline, YAML)
    repoid, child = settle(pipeline, sha("c"), sha("b"), ("unit", UNIT_C))
    assert flag_rows(pipeline, child)["ui"][0] == sha("b")
    # an upload of ui arrives; its intermediate is lost before the merge, so
    # the pass re-drives it and merges nothing
    accepted = _upload(pipeline, sha("c"), "ui", UI_C)
    [late] = accepted.upload_ids
    assert pipeline.process(late) == UploadState.PROCESSED
    state = pipeline.services.state
    pipeline.services.redis.delete(state.keys(repoid, child).report(late))
    outcome = pipeline.finish(repoid, child)
    assert outcome.redriven == [late] and outcome.merged == []
    # meanwhile the commit still counts its carried ui, once
    rows = flag_rows(pipeline, child)
    assert rows["ui"][:2] == (sha("b"), 0)
    report, totals, _ = commit_report(pipeline, child)
    carried_ui = lcov({"web/app.js": {1: 1, 2: 1}})
    assert totals == merged(UNIT_C, carried_ui).totals().to_dict()

    assert pipeline.process(late) == UploadState.PROCESSED  # re-driven: parsed again
    pipeline.finish(repoid, child)

    rows = flag_rows(pipeline, child)
    assert rows["ui"][:2] == (None, 1)
    report, totals, own = commit_report(pipeline, child)
    assert codec.load_part(report).to_report() == merged(UNIT_C, UI_C).to_report()
    assert totals == merged(UNIT_C, UI_C).totals().to_dict()
    assert own is None
    del parent


def test_a_carried_flag_stays_counted_while_the_pass_merging_its_upload_loses_that_upload(
    pipeline: Pipeline,
) -> None:
    settle(pipeline, sha("b"), None, ("unit", UNIT_P), ("ui", UI_P))
    set_yaml(pipeline, YAML)
    repoid, child = settle(pipeline, sha("c"), sha("b"), ("unit", UNIT_C))
    ui = _upload(pipeline, sha("c"), "ui", UI_C).upload_ids[0]
    e2e = _upload(pipeline, sha("c"), "e2e", E2E_P).upload_ids[0]
    for upload_id in (ui, e2e):
        assert pipeline.process(upload_id) == UploadState.PROCESSED
    pipeline.services.redis.delete(pipeline.services.state.keys(repoid, child).report(ui))

    outcome = pipeline.finish(repoid, child)

    assert outcome.merged == [e2e] and outcome.redriven == [ui]
    carried_ui = lcov({"web/app.js": {1: 1, 2: 1}})
    assert flag_rows(pipeline, child)["ui"][:2] == (sha("b"), 0)
    _, totals, _ = commit_report(pipeline, child)
    assert totals == merged(UNIT_C, E2E_P, carried_ui).totals().to_dict()
    assert pipeline.process(ui) == UploadState.PROCESSED
    pipeline.finish(repoid, child)
    _, totals, own = commit_report(pipeline, child)
    assert totals == merged(UNIT_C, E2E_P, UI_C).totals().to_dict() and own is None


def test_a_test_results_upload_of_a_carried_flag_does_not_replace_its_coverage(
    pipeline: Pipeline,
) -> None:
    settle(pipeline, sha("b"), None, ("unit", UNIT_P), ("ui", UI_P))
    set_yaml(pipeline, YAML)
    # the child uploads ui coverage, unit only as JUnit test results: unit stays carried
    repoid, child = settle(pipeline, sha("c"), sha("b"), ("ui", UI_C))
    assert flag_rows(pipeline, child)["unit"][:2] == (sha("b"), 0)
    _, _, tests = upload_tests(pipeline, junit(("test_a", "passed")), sha=sha("c"), flags=("unit",))
    assert pipeline.process(tests) == UploadState.PROCESSED

    pipeline.finish(repoid, child)

    rows = flag_rows(pipeline, child)
    assert rows["unit"][:2] == (sha("b"), 0)
    _, totals, _ = commit_report(pipeline, child)
    assert totals == merged(UI_C, UNIT_P).totals().to_dict()


def test_a_huge_codecov_yml_at_the_head_is_refused_and_not_kept_in_memory(
    pipeline: Pipeline,
) -> None:
    settle(pipeline, sha("0"), None, ("unit", UNIT_P))
    huge = "flags:\n" + "  # padding\n" * (MAX_YAML_BYTES // 10)
    cached = _parsed_small.cache_info().currsize
    with pipeline.services.sessions() as session:
        config = commit_config(session, 1, HeadYaml(huge))
    assert any("larger than" in str(error) for error in config.errors)
    assert _parsed_small.cache_info().currsize == cached  # not a cache key
