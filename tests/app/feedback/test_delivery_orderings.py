"""Pull-request feedback under the orders CI events really come in: the real
pipeline, the real ``prepare`` and outbox, run as the actors run them
(the finisher's pending row, the notification's prepare row, then the rows
it writes), on real PostgreSQL and Redis, against the fake GitHub behind Prism.
"""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest
import sqlalchemy as sa

from app.db.models import Commit, PullDelivery, Repository, Upload, UploadState, utcnow
from app.db.pull_deliveries import COMMENT
from app.feedback import delivery, rows
from app.feedback import prepare as preparing
from app.providers import CallCounter, Providers
from app.providers.github import GitHub, TokenAuth
from app.providers.http import ProviderHttp
from app.pullrequests.statuses import PENDING_DESCRIPTION
from tests.support.fake_github import FakeGitHub, FakePull, PrismProxy, needs_prism
from tests.support.pipeline import Pipeline
from tests.support.synthetic import ci_matrix

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120), needs_prism]

REPO = "acme/web"
BASE, OLD, OTHER, HEAD = "b" * 40, "c" * 40, "d" * 40, "e" * 40
PATCH = "@@ -1,2 +1,4 @@\n line\n+added\n+added\n line\n"
NOT_A_REPORT = [("broken.xml", b"<coverage><unclosed")]


@dataclasses.dataclass
class Flow:
    """The pipeline and the feedback actors' steps, in the order the actors take them."""

    pipeline: Pipeline
    fake: FakeGitHub

    def deliver(self, row: int) -> None:
        """``deliver_pull``: the row, then the rows a prepare wrote."""
        attempt = delivery.deliver(
            self.pipeline.services,
            self.pipeline.services.providers,
            row,
            preparing.prepare,
            pending=preparing.pending,
        )
        for followup in attempt.followups:
            self.deliver(followup)

    def upload(self, sha: str, reports: list[tuple[str, bytes]], **fields: object) -> list[int]:
        accepted = self.pipeline.upload(reports, repo=REPO, sha=sha)
        if fields:
            with self.pipeline.services.sessions.begin() as session:
                session.execute(sa.update(Commit).where(Commit.sha == sha).values(**fields))
        return accepted.upload_ids

    def process(self, *upload_ids: int) -> None:
        for upload_id in upload_ids:
            self.pipeline.process(upload_id)

    def finish(self, sha: str) -> None:
        """``upload_finisher``: merge, notify if settled, pending while uploads are in flight."""
        repoid, commitid = self.ids(sha)
        self.pipeline.finish(repoid, commitid)
        if self.pipeline.outbox.notify:
            self.pipeline.outbox.notify.clear()
            self.notify(sha)
        pending = rows.enqueue_pending(self.pipeline.services, commitid)
        if pending is not None:
            self.deliver(pending)

    def notify(self, sha: str) -> None:
        """``notify``: the notification, then the prepare row written with it."""
        result = self.pipeline.notify(*self.ids(sha))
        if result.prepare_pending is not None:
            self.deliver(result.prepare_pending)

    def ids(self, sha: str) -> tuple[int, int]:
        with self.pipeline.services.sessions() as session:
            commit = session.scalars(sa.select(Commit).where(Commit.sha == sha)).one()
            return commit.repository_id, commit.id

    def statuses(self, sha: str) -> dict[str, list[tuple[str, str]]]:
        """Each context's writes on ``sha``, in order: (state, description)."""
        out: dict[str, list[tuple[str, str]]] = {}
        for s in self.fake.state.statuses.get((REPO, sha), []):
            out.setdefault(s["context"], []).append((s["state"], s["description"]))
        return out

    def showing(self, sha: str) -> dict[str, str]:
        """What each context of ``sha`` shows now (its last write's state)."""
        return {context: writes[-1][0] for context, writes in self.statuses(sha).items()}


@pytest.fixture
def flow(real_pipeline: Pipeline, github: tuple[FakeGitHub, PrismProxy]) -> Flow:
    fake, proxy = github
    counter = CallCounter()
    http = ProviderHttp(proxy.url, timeout_s=10, counter=counter)
    real_pipeline.services.providers = Providers(
        {"github": GitHub(http, TokenAuth("ghp_test"))}, counter
    )
    return Flow(real_pipeline, fake)


def pull_request_7(flow: Flow, head: str = HEAD) -> None:
    """BASE settled on main; pull request 7 from feature (head ``head``) into main."""
    flow.process(*flow.upload(BASE, ci_matrix(1, files=1, lines=5), branch="main"))
    flow.finish(BASE)
    flow.fake.add_pull(REPO, FakePull(7, BASE, "main", head, "feature"))
    flow.fake.add_diff(REPO, BASE, head, [("src/pkg/module_000.py", "modified", PATCH)])


# -- 1. the last upload in flight fails after a pending status went out --------------


def test_a_pending_status_ends_final_when_the_last_upload_in_flight_fails_to_parse(
    flow: Flow,
) -> None:
    pull_request_7(flow)
    first = flow.upload(HEAD, ci_matrix(1, files=1, lines=5), branch="feature", pullid=7)
    flow.process(*first)
    flow.finish(HEAD)  # settled, final statuses and the comment
    late = flow.upload(HEAD, NOT_A_REPORT)  # another job of the same commit
    flow.finish(HEAD)  # in flight: pending
    assert flow.showing(HEAD) == {"codecov/project": "pending", "codecov/patch": "pending"}

    flow.process(*late)  # fails to parse: the commit settles again at the same version
    flow.finish(HEAD)

    writes = flow.statuses(HEAD)
    assert [state for state, _ in writes["codecov/project"]] == ["success", "pending", "success"]
    assert writes["codecov/project"][-1] == writes["codecov/project"][0]  # what merged
    assert writes["codecov/patch"][-1] == writes["codecov/patch"][0]


def test_a_pending_status_ends_final_when_the_sweep_gives_up_the_last_upload_in_flight(
    flow: Flow,
) -> None:
    pull_request_7(flow)
    first, stuck = flow.upload(HEAD, ci_matrix(2, files=1, lines=5), branch="feature", pullid=7)
    flow.process(first)
    flow.finish(HEAD)  # the other one is in flight: pending
    assert flow.showing(HEAD) == {"codecov/project": "pending", "codecov/patch": "pending"}
    flow.pipeline.sweep()  # the first sweep sets Redis's epoch marker
    limit = flow.pipeline.services.settings.max_redrives
    with flow.pipeline.services.sessions.begin() as session:  # its processor died each time
        session.execute(
            sa.update(Upload)
            .where(Upload.id == stuck)
            .values(state=UploadState.PROCESSING, redrives=limit, updated_at=utcnow())
        )

    swept = flow.pipeline.sweep(now=utcnow() + timedelta(hours=1))
    assert swept.given_up == [stuck]
    flow.pipeline.outbox.notify.clear()
    flow.notify(HEAD)  # the notify the sweep sends

    assert "pending" not in flow.showing(HEAD).values()
    assert "compared to bbbbbbb" in flow.statuses(HEAD)["codecov/project"][-1][1]


def test_a_commit_whose_every_upload_failed_ends_its_pending_statuses_and_posts_no_comment(
    flow: Flow,
) -> None:
    pull_request_7(flow)
    first, second = flow.upload(
        HEAD, [*NOT_A_REPORT, ("broken-2.xml", b"<coverage><unclosed")], branch="feature", pullid=7
    )
    flow.process(first)
    flow.finish(HEAD)
    assert flow.showing(HEAD) == {"codecov/project": "pending", "codecov/patch": "pending"}

    flow.process(second)
    flow.finish(HEAD)

    # Codecov's statuses for a head without coverage (if_not_found, default success).
    assert flow.statuses(HEAD)["codecov/project"][-1] == (
        "success",
        "No coverage information found on head",
    )
    assert flow.showing(HEAD)["codecov/patch"] == "success"
    assert flow.fake.comments_on(REPO, 7) == {}


def test_a_commit_whose_only_upload_failed_gets_no_status_at_all(flow: Flow) -> None:
    pull_request_7(flow)
    flow.process(*flow.upload(HEAD, NOT_A_REPORT, branch="feature", pullid=7))
    flow.finish(HEAD)

    assert flow.statuses(HEAD) == {}  # nothing pending to end: as Codecov, nothing sent
    assert flow.fake.comments_on(REPO, 7) == {}


def test_a_pending_row_delivered_after_its_commit_settled_sends_nothing(flow: Flow) -> None:
    pull_request_7(flow)
    ids = flow.upload(HEAD, ci_matrix(2, files=1, lines=5), branch="feature", pullid=7)
    flow.process(ids[0])
    _, commit_id = flow.ids(HEAD)
    flow.pipeline.finish(*flow.ids(HEAD))
    pending = rows.enqueue_pending(flow.pipeline.services, commit_id)
    assert pending is not None
    flow.process(ids[1])
    flow.pipeline.finish(*flow.ids(HEAD))  # settled before the pending row's message ran
    flow.deliver(pending)

    assert flow.statuses(HEAD) == {}
    flow.notify(HEAD)
    assert set(flow.showing(HEAD)) == {"codecov/project", "codecov/patch"}
    assert "pending" not in flow.showing(HEAD).values()


# -- 2. nothing is sent pending that will not be sent final -----------------------------


def store_yaml(flow: Flow, text: str) -> None:
    """The repository's stored codecov.yml (``covworker repo set --yaml``)."""
    with flow.pipeline.services.sessions.begin() as session:
        session.execute(sa.update(Repository).values(codecov_yaml=text))


def test_an_ignored_status_without_a_base_is_never_sent_pending(flow: Flow) -> None:
    yml = "coverage:\n  status:\n    project:\n      default:\n        if_not_found: ignore\n"
    flow.fake.add_file(REPO, HEAD, "codecov.yml", yml.encode())
    ids = flow.upload(HEAD, ci_matrix(2, files=1, lines=5), branch="feature")  # no base
    store_yaml(flow, yml)
    flow.process(ids[0])
    flow.finish(HEAD)
    flow.process(ids[1])
    flow.finish(HEAD)

    writes = flow.statuses(HEAD)
    assert "codecov/project" not in writes  # never final (no base), so never pending
    assert [state for state, _ in writes["codecov/patch"]] == ["pending", "success"]


def test_an_only_pulls_status_is_pending_only_once_the_commits_pull_request_is_known(
    flow: Flow,
) -> None:
    ids = flow.upload(HEAD, ci_matrix(2, files=1, lines=5), branch="feature", pullid=7)
    store_yaml(flow, "coverage:\n  status:\n    patch:\n      default:\n        only_pulls: true\n")
    flow.process(ids[0])
    flow.finish(HEAD)  # pull 7 is not known: the provider has not been asked yet

    assert flow.statuses(HEAD) == {"codecov/project": [("pending", PENDING_DESCRIPTION)]}


# -- 3. a late upload of an older push ---------------------------------------------------


def test_a_late_upload_of_an_older_push_updates_its_statuses_not_the_pull_requests_comment(
    flow: Flow,
) -> None:
    pull_request_7(flow)  # the pull request's head is HEAD
    flow.fake.add_diff(REPO, BASE, OLD, [("src/pkg/module_000.py", "modified", PATCH)])
    flow.process(*flow.upload(HEAD, ci_matrix(2, files=1, lines=5), branch="feature", pullid=7))
    flow.finish(HEAD)
    (comment_id,) = flow.fake.comments_on(REPO, 7)
    comment = flow.fake.comments_on(REPO, 7)[comment_id]

    # The older push's CI finishes last (-B feature -P 7), with other numbers.
    flow.process(*flow.upload(OLD, ci_matrix(1, files=1, lines=5, first_job=5), pullid=7))
    flow.finish(OLD)

    assert flow.fake.comments_on(REPO, 7) == {comment_id: comment}
    assert flow.showing(OLD) == {"codecov/project": "success", "codecov/patch": "success"}
    _, old_id = flow.ids(OLD)
    with flow.pipeline.services.sessions() as session:
        targets = session.scalars(
            sa.select(PullDelivery.target).where(PullDelivery.commit_id == old_id)
        ).all()
    assert COMMENT not in targets


def test_an_older_pushs_comment_rendered_while_it_was_the_head_stands_down_once_it_is_not(
    flow: Flow,
) -> None:
    pull_request_7(flow, head=OLD)
    flow.fake.add_diff(REPO, BASE, HEAD, [("src/pkg/module_000.py", "modified", PATCH)])
    newer = flow.upload(HEAD, ci_matrix(1, files=1, lines=5), branch="feature", pullid=7)
    flow.process(*flow.upload(OLD, ci_matrix(1, files=1, lines=5, first_job=5), pullid=7))
    flow.pipeline.finish(*flow.ids(OLD))
    prepare = flow.pipeline.notify(*flow.ids(OLD)).prepare_pending
    assert prepare is not None
    attempt = delivery.deliver(
        flow.pipeline.services, flow.pipeline.services.providers, prepare, preparing.prepare
    )
    old_comment = [r for r in attempt.followups if _target(flow, r) == COMMENT]
    assert old_comment  # rendered while OLD was the head; its message is late
    flow.fake.add_pull(REPO, FakePull(7, BASE, "main", HEAD, "feature"))  # pushed again
    flow.process(*newer)
    flow.finish(HEAD)

    flow.deliver(old_comment[0])

    (body,) = flow.fake.comments_on(REPO, 7).values()
    assert HEAD[:7] in body and OLD[:7] not in body


def _target(flow: Flow, row: int) -> str:
    with flow.pipeline.services.sessions() as session:
        return str(session.scalar(sa.select(PullDelivery.target).where(PullDelivery.id == row)))


# -- the entry point of an inbound provider event ------------------------------------------
