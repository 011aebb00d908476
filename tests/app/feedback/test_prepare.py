"""prepare: the pull request, the base, codecov.yml and the diff of a settled version.

Real PostgreSQL and Redis; the provider is the fake GitHub behind Prism.
"""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from app.db.models import Commit, Repository, Upload
from app.db.pull_deliveries import COMMENT
from app.feedback import prepare as preparing
from app.feedback.rows import Prepared
from app.figures import display_config
from app.providers import CallCounter
from app.providers.github import GitHub, TokenAuth
from app.providers.http import ProviderHttp
from tests.support.fake_github import FakeGitHub, FakePull, PrismProxy, needs_prism
from tests.support.pipeline import Pipeline
from tests.support.synthetic import ci_matrix
from tests.support.testresults import junit, payload, upload_tests
from tests.support.testresults import settle as settle_tests

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120), needs_prism]

REPO = "acme/web"
BASE, OTHER, HEAD = "b" * 40, "d" * 40, "e" * 40
PATCH = "@@ -1,2 +1,4 @@\n line\n+added\n+added\n line\n"


def settle(pipeline: Pipeline, sha: str, uploads: int, **fields: object) -> Commit:
    accepted = pipeline.upload(ci_matrix(uploads, files=1, lines=5), repo=REPO, sha=sha)
    with pipeline.services.sessions.begin() as session:
        if fields:
            session.execute(sa.update(Commit).where(Commit.sha == sha).values(**fields))
    for u in accepted.upload_ids:
        pipeline.process(u)
    pipeline.finish(accepted.repoid, accepted.commitid)
    pipeline.notify(accepted.repoid, accepted.commitid)
    with pipeline.services.sessions() as session:
        commit = session.scalars(sa.select(Commit).where(Commit.sha == sha)).one()
        session.expunge(commit)
    return commit


def repository(pipeline: Pipeline) -> Repository:
    with pipeline.services.sessions() as session:
        repo = session.scalars(sa.select(Repository).where(Repository.name == REPO)).one()
        session.expunge(repo)
    return repo


def pull_request_7(pipeline: Pipeline, fake: FakeGitHub, sha: str = HEAD) -> Commit:
    """BASE settled on main, then ``sha`` on feature as a commit of pull request 7,
    which the fake has from main to HEAD (its head now): ``sha``'s commit."""
    settle(pipeline, BASE, 1, branch="main")
    commit = settle(pipeline, sha, 1, branch="feature", pullid=7)
    fake.add_pull(REPO, FakePull(7, BASE, "main", HEAD, "feature"))
    return commit


def prepare(pipeline: Pipeline, provider: GitHub, commit: Commit, version: int) -> Prepared:
    """``prepare.prepare`` of REPO's ``commit`` at ``version``."""
    return preparing.prepare(pipeline.services, provider, repository(pipeline), commit, version)


def client(proxy: PrismProxy) -> tuple[GitHub, CallCounter]:
    counter = CallCounter()
    return GitHub(ProviderHttp(proxy.url, timeout_s=10, counter=counter), TokenAuth("t")), counter


def test_an_upload_with_a_pull_number_is_compared_with_the_pulls_settled_base_in_budget(
    real_pipeline: Pipeline, github: tuple[FakeGitHub, PrismProxy]
) -> None:
    fake, proxy = github
    settle(real_pipeline, BASE, 1, branch="main")
    settle(real_pipeline, OTHER, 1, branch="main")  # newer on main, not the pull's base
    head = settle(real_pipeline, HEAD, 2, branch="feature", pullid=7)  # -B feature -P 7
    fake.add_pull(REPO, FakePull(7, BASE, "main", HEAD, "feature"))
    fake.add_diff(REPO, BASE, HEAD, [("src/pkg/module_000.py", "modified", PATCH)])
    provider, counter = client(proxy)

    first = prepare(real_pipeline, provider, head, 1)
    again = prepare(real_pipeline, provider, head, 2)

    assert first.info["pull"]["number"] == 7 and first.info["base"] == BASE
    assert [t.target for t in first.targets] == [
        "status:codecov/project",
        "status:codecov/patch",
        COMMENT,
    ]
    # By number (GET /pulls/7), not by commit; codecov.yml looked up once per commit.
    assert fake.calls("GET", "/pulls/7") and not fake.calls("GET", f"/commits/{HEAD}/pulls")
    # The repository (its default branch) is read once an interval, not per version.
    assert counter.counts == {"pull": 2, "compare": 2, "contents": 12, "repository": 1}
    assert again.info == first.info


def test_a_pull_whose_base_has_no_report_is_compared_with_the_newest_settled_of_its_branch(
    real_pipeline: Pipeline, github: tuple[FakeGitHub, PrismProxy]
) -> None:
    fake, proxy = github
    settle(real_pipeline, BASE, 1, branch="main")
    settle(real_pipeline, OTHER, 1, branch="main")
    head = settle(real_pipeline, HEAD, 2, branch="feature")
    unknown = "f" * 40  # the pull's base: never uploaded
    fake.add_pull(REPO, FakePull(9, unknown, "main", HEAD, "feature"))
    fake.add_diff(REPO, unknown, HEAD, [("src/pkg/module_000.py", "modified", PATCH)])
    provider, _ = client(proxy)

    prepared = prepare(real_pipeline, provider, head, 1)

    assert prepared.info["pull"]["number"] == 9  # found by commit
    assert prepared.info["base"] == OTHER  # Codecov's compared-to: newest settled on main
    assert fake.calls("GET", f"/compare/{unknown}...{HEAD}")  # the diff: the pull's own base


@pytest.mark.parametrize("junit_uploads", [0, 1])
def test_nothing_is_sent_until_after_n_builds_coverage_uploads_are_merged(
    real_pipeline: Pipeline, github: tuple[FakeGitHub, PrismProxy], junit_uploads: int
) -> None:
    fake, proxy = github
    fake.add_file(REPO, HEAD, "codecov.yml", b"codecov:\n  notify:\n    after_n_builds: 3\n")
    tests = [
        upload_tests(real_pipeline, payload(junit(("test_adds", "passed"))), sha=HEAD)
        for _ in range(junit_uploads)
    ]
    head = settle(real_pipeline, HEAD, 2)
    if tests:
        settle_tests(real_pipeline, *tests)
    provider, _ = client(proxy)

    waiting = prepare(real_pipeline, provider, head, 1 + junit_uploads)

    # Codecov counts coverage uploads only: a JUnit upload merges, but is not a build.
    assert waiting.targets == ()
    assert waiting.info["waiting"] == "2 of 3 builds"


def test_the_comment_carries_the_commits_failed_tests_beside_its_coverage(
    real_pipeline: Pipeline, github: tuple[FakeGitHub, PrismProxy]
) -> None:
    fake, proxy = github
    settle(real_pipeline, BASE, 1, branch="main")
    junit_upload = upload_tests(
        real_pipeline,
        payload(junit(("test_adds", "passed"), ("test_divides", "failed"))),
        sha=HEAD,
        branch="feature",
    )
    head = settle(real_pipeline, HEAD, 1, branch="feature", pullid=7)
    settle_tests(real_pipeline, junit_upload)
    fake.add_pull(REPO, FakePull(7, BASE, "main", HEAD, "feature"))
    fake.add_diff(REPO, BASE, HEAD, [("src/pkg/module_000.py", "modified", PATCH)])
    provider, _ = client(proxy)

    prepared = prepare(real_pipeline, provider, head, 2)

    comment = next(t for t in prepared.targets if t.target == COMMENT).payload["body"]
    assert "Coverage Diff" in comment  # the coverage sections stay
    assert "1 Tests Failed" in comment and "test_divides" in comment
    # No COVWORKER_PUBLIC_URL here: no links to covworker, and none back to the pull request.
    assert comment.startswith("## Codecov Report\n")
    assert "github.com" not in comment and "/pull/7" not in comment
    # the failures above the fold of the coverage details, where a reader sees them
    assert comment.index("Tests Failed") < comment.index("Coverage Diff")


def test_files_past_githubs_300_are_measured_and_files_without_a_patch_are_named(
    real_pipeline: Pipeline, github: tuple[FakeGitHub, PrismProxy]
) -> None:
    fake, proxy = github
    head = pull_request_7(real_pipeline, fake)
    files: list[tuple[str, str, str | None]] = [
        (f"docs/page{i:03}.md", "modified", PATCH) for i in range(310)
    ]
    files.append(("src/pkg/module_000.py", "modified", PATCH))  # the 311th: past 300
    files.append(("assets/huge.json", "modified", None))  # too large: GitHub gives no patch
    fake.add_diff(REPO, BASE, HEAD, files)
    provider, counter = client(proxy)

    prepared = prepare(real_pipeline, provider, head, 1)

    assert [f["path"] for f in prepared.info["diff"]] == ["src/pkg/module_000.py"]
    assert prepared.info["patch"] is not None  # measured, not dropped
    assert prepared.info["not_measured"] == ["assets/huge.json"]
    assert prepared.info["not_measured_count"] == 1
    assert prepared.info["diff_truncated"] is False
    assert len(fake.calls("GET", "/pulls/7/files")) == 4  # 312 files, 100 a page
    assert counter.counts["compare"] == 5
    (comment,) = [t for t in prepared.targets if t.target == COMMENT]
    assert (
        ":warning: 1 file of the diff not measured (the provider gave no patch): "
        "`assets/huge.json`." in comment.payload["body"].splitlines()
    )


def test_an_added_empty_file_is_not_named_not_measured(
    real_pipeline: Pipeline, github: tuple[FakeGitHub, PrismProxy]
) -> None:
    # GitHub lists an added empty file without a patch and with 0 changes:
    # the provider omitted nothing, there is nothing to measure.
    fake, proxy = github
    head = pull_request_7(real_pipeline, fake)
    fake.add_diff(
        REPO,
        BASE,
        HEAD,
        [
            ("src/pkg/module_000.py", "modified", PATCH),
            ("src/pkg/__init__.py", "added", ""),
            ("assets/huge.json", "modified", None),  # too large: no patch, changes > 0
        ],
    )
    provider, _ = client(proxy)

    prepared = prepare(real_pipeline, provider, head, 1)

    assert prepared.info["not_measured"] == ["assets/huge.json"]
    (comment,) = [t for t in prepared.targets if t.target == COMMENT]
    assert "__init__" not in comment.payload["body"]


def test_an_older_commit_of_a_pull_does_not_take_the_pulls_current_file_list(
    real_pipeline: Pipeline, github: tuple[FakeGitHub, PrismProxy]
) -> None:
    fake, proxy = github
    old_head = pull_request_7(real_pipeline, fake, OTHER)  # the pull has moved on to HEAD since
    fake.add_diff(REPO, BASE, OTHER, [(f"docs/p{i:03}.md", "modified", PATCH) for i in range(300)])
    provider, _ = client(proxy)

    prepared = prepare(real_pipeline, provider, old_head, 1)

    assert not fake.calls("GET", "/pulls/7/files")
    assert prepared.info["diff_truncated"] is True


def test_the_codecov_yml_read_at_the_head_is_the_one_every_surface_rounds_with(
    real_pipeline: Pipeline, github: tuple[FakeGitHub, PrismProxy]
) -> None:
    fake, proxy = github
    head = pull_request_7(real_pipeline, fake)
    fake.add_diff(REPO, BASE, HEAD, [("src/pkg/module_000.py", "modified", PATCH)])
    fake.add_file(REPO, HEAD, "codecov.yml", b"coverage:\n  precision: 1\n  round: up\n")
    provider, _ = client(proxy)
    with real_pipeline.services.sessions() as session:
        assert display_config(session, head.repository_id).round == "down"

    prepare(real_pipeline, provider, head, 1)

    with real_pipeline.services.sessions() as session:
        config = display_config(session, head.repository_id)
    assert (config.precision, config.round) == (1, "up")


FLAG_AFTER_2 = b"""flag_management:
  individual_flags:
    - name: unit
      after_n_builds: 2
      statuses:
        - type: project
"""


@pytest.mark.parametrize("unit_uploads", [1, 2])
def test_a_flags_status_waits_for_its_after_n_builds_uploads_of_the_flag(
    real_pipeline: Pipeline, github: tuple[FakeGitHub, PrismProxy], unit_uploads: int
) -> None:
    fake, proxy = github
    fake.add_file(REPO, HEAD, "codecov.yml", FLAG_AFTER_2)
    accepted = real_pipeline.upload(ci_matrix(3, files=1, lines=5), repo=REPO, sha=HEAD)
    with real_pipeline.services.sessions.begin() as session:  # -F unit on some, -F e2e on the rest
        for n, upload_id in enumerate(accepted.upload_ids):
            flags = ["unit"] if n < unit_uploads else ["e2e"]
            session.execute(sa.update(Upload).where(Upload.id == upload_id).values(flags=flags))
    for upload_id in accepted.upload_ids:
        real_pipeline.process(upload_id)
    real_pipeline.finish(accepted.repoid, accepted.commitid)
    with real_pipeline.services.sessions() as session:
        head = session.scalars(sa.select(Commit).where(Commit.sha == HEAD)).one()
        session.expunge(head)
    provider, _ = client(proxy)

    prepared = prepare(real_pipeline, provider, head, 1)

    contexts = [t.target for t in prepared.targets]
    # Three builds merged, but only ``unit_uploads`` of them are unit's: its status waits for 2.
    assert ("status:codecov/project/unit" in contexts) is (unit_uploads == 2)
    assert "status:codecov/project" in contexts
