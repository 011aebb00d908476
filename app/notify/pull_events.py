"""A provider's pull-request event: store the pull request, and feed it back.

Codecov posts on the provider's pull-request event, not only on an upload:
a pull request opened after CI finished (push, CI uploads, then open the
pull request: the usual order) gets its comment and statuses at once. An
event (:mod:`app.providers.events`, received by
``app/api/provider_webhooks.py``) here:

1. finds its repository by name and service (one event opens one
   repository; an unknown one stores nothing);
2. stores the pull request as the event describes it
   (:func:`app.db.bases.remember_pull`: the base every surface compares the
   pull's commits with) and the repository's default branch it names
   (:func:`app.feedback.default_branch.learn_default_branch`);
3. if the event may change what the pull request shows (opened, reopened,
   a new head, a new base) and its head commit is settled, writes a
   ``prepare`` row for the head's settled version marked for this pull and
   base (:func:`app.feedback.delivery.pull_round`), whose delivery
   prepares and writes the comment and statuses as an upload's would.

The row's unique key (commit, version, target) makes an event idempotent
per (pull, head, base): GitHub redelivering it, or GitLab retrying it,
finds the row and sends nothing. A head without a settled report gets
nothing now: its settling sends feedback as usual, and finds the stored pull.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.db.bases import remember_pull
from app.db.engine import conflict_insert
from app.db.models import Commit, PullDelivery, Repository, utcnow
from app.db.pull_deliveries import PENDING, PREPARE, pull_round
from app.db.repos import learn_provider_private
from app.feedback.default_branch import learn_default_branch
from app.notify.notifier import settled_state
from app.providers.events import PullEvent
from app.runtime.services import Services


@dataclass(frozen=True, slots=True)
class Received:
    """What an event did."""

    #: The event's repository is one covworker has (for its service).
    known: bool
    #: The ``prepare`` row to deliver now; None when nothing is to be sent.
    prepare_id: int | None
    #: What happened, in words (the provider shows it in its delivery log).
    detail: str


def receive(services: Services, event: PullEvent) -> Received:
    """Store ``event``'s pull request and, if its head is settled, arm its feedback."""
    with services.sessions.begin() as session:
        repo_id = session.scalar(
            sa.select(Repository.id).where(
                Repository.name == event.repository, Repository.service == event.service
            )
        )
        if repo_id is None:
            return Received(False, None, f"no {event.service} repository {event.repository}")
        remember_pull(
            session,
            repo_id,
            number=event.number,
            state=event.state,
            title=event.title,
            url=event.url,
            base_branch=event.base_branch,
            base_sha=event.base_sha,
            head_branch=event.head_branch,
            head_sha=event.head_sha,
        )
        learn_default_branch(session, repo_id, event.default_branch)
        if event.private is not None:
            learn_provider_private(session, repo_id, event.private)
        what = f"pull request {event.number} stored"
        if not event.asks_feedback or event.state != "open":
            return Received(True, None, what)
        head = _settled_head(session, repo_id, event.head_sha)
        if head is None:
            return Received(
                True, None, f"{what}; its head has no settled report yet: feedback follows it"
            )
        commit_id, version, uploads = head
        target = PREPARE + pull_round(event.number, event.base_branch, event.base_sha)
        prepare_id = session.scalar(
            conflict_insert(session, PullDelivery)
            .values(
                commit_id=commit_id,
                report_version=version,
                target=target,
                payload={"uploads": uploads},
                state=PENDING,
                created_at=utcnow(),
            )
            .on_conflict_do_nothing()
            .returning(PullDelivery.id)
        )
    if prepare_id is None:
        return Received(True, None, f"{what}; feedback for this head and base was asked already")
    return Received(True, int(prepare_id), f"{what}; feedback for version {version} is on its way")


def _settled_head(session: Session, repository_id: int, sha: str) -> tuple[int, int, int] | None:
    """The head commit's id, report version and uploads final, if it is settled
    (the uploads rank the event's writes with the version's own:
    ``app.feedback.rows.uploads_known``)."""
    commit_id = session.scalar(
        sa.select(Commit.id).where(Commit.repository_id == repository_id, Commit.sha == sha)
    )
    state = settled_state(session, commit_id) if commit_id is not None else None
    if commit_id is None or state is None or not state.version:
        return None
    return int(commit_id), state.version, state.merged + state.failed
