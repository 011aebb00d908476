"""Pull-request feedback from an outbox: statuses and the comment, once per version.

Same rules as the webhooks' outbox (:mod:`app.notify.webhooks`; the
timing rules of both in :mod:`app.db.outbox`), in a table of its
own (``pull_deliveries``), one row per (commit, report version, target):

- ``prepare``: written when the version's notification is; its delivery
  finds the pull request, reads ``codecov.yml``, takes the diff and renders
  everything (:mod:`app.feedback.prepare`): at most one pull lookup and
  one compare per version. It writes one row per status (``status:<context>``)
  and one ``comment`` row, and those are delivered next;
- a status or comment row makes one provider write.

A provider's pull-request event (:mod:`app.notify.pull_events`) asks for
a version again, for one pull request: its ``prepare`` row is named
``prepare|pull-<number>-<key>`` (:func:`pull_round`) and the rows it writes
carry the same mark, so a version whose rows were sent before the pull
request existed is prepared and written once more, once per (pull, head,
base). What was already written identically is not written again (below).

An attempt first *claims* its row (one conditional UPDATE: still pending,
due), so two messages for one row never send twice. A transient failure
(5xx, timeout, rate limit) puts the row back with a backoff (the rate
limit's own wait when longer) until ``pr_delivery_horizon_s``; a 401/403/404
fails it with the reason, which ``covworker status``, the commit page and
``/-/ops`` show; a row of an older version is superseded once a newer one
of the same commit exists.

A repository over its budget of provider calls (:mod:`app.providers.budget`)
has its row deferred until the budget allows a call: not an attempt, and
never failed for the wait. A commit the provider does not know is skipped,
with that reason, without a call. Both are counted
(``covworker_pr_feedback_held``) and the deferred row's reason is on ``/-/ops``.

Writes are ordered through ``pull_sent``: a status context of a commit and
a pull request's comment each have a row naming the commit and the rank
that last wrote it. A write locks that row for the length of the provider
call, so an older write never overwrites a newer one (it finds the newer
one's mark and stands down), an identical payload is never sent twice, and
the comment is created once and edited in place: its 64-bit id lives there.

A write's rank counts the commit's uploads (``uploads_known``): a settled
state of N uploads (merged or failed) writes its final statuses at rank
2N + 1, a ``pending`` status is written at 2N while N uploads are known and
one of them is still in flight. So a pending status outranks every final
one written before its uploads arrived, and the final statuses of the state
that settles them (whether they merged or failed) outrank it: every pending
status ends final. A settled state that keeps the report version (uploads
that failed) prepares that version again (:func:`arm_prepare`).

The comment belongs to the pull request, not to a commit: only the pull
request's head (``pulls.head_sha``, as the provider last said) writes it;
an older push that settles late writes its own statuses only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, NamedTuple

import sqlalchemy as sa

from app.db.engine import conflict_insert
from app.db.models import (
    Commit,
    Pull,
    PullDelivery,
    Repository,
    utcnow,
)
from app.db.outbox import claim_until, due
from app.db.pull_deliveries import (
    COMMENT,
    PENDING,
    PENDING_STATUSES,
    PREPARE,
    SENT,
    SKIPPED,
    STATUS_PREFIX,
    SUPERSEDED,
    comment_key,
    kind_of,
    round_of,
)
from app.feedback import prepare as preparing
from app.feedback.rows import (
    IF_PENDING,
    Attempt,
    Prepared,
    defer,
    digest,
    fail,
    finish,
    lock_sent,
    mark,
    retry,
    uploads_known,
)
from app.providers import (
    AccessDenied,
    OverBudget,
    Provider,
    ProviderError,
    Providers,
    ProviderUnavailable,
    RateLimited,
    Status,
    UnknownCommit,
)
from app.runtime.services import Services

logger = logging.getLogger(__name__)


#: prepare(services, provider, repository, commit, version) -> Prepared
PrepareFn = Callable[[Services, Provider, Repository, Commit, int], Prepared]


#: pending(services, repository, commit) -> the pending statuses' payloads
PendingFn = Callable[[Services, Repository, Commit], Sequence[dict[str, Any]]]


def deliver(
    services: Services,
    providers: Providers,
    delivery_id: int,
    prepare: PrepareFn = preparing.prepare,
    now: datetime | None = None,
    pending: PendingFn | None = preparing.pending,
) -> Attempt:
    """One attempt at delivery row ``delivery_id``, if it is due: a ``prepare``
    row runs :func:`app.feedback.prepare.prepare` (a test passes its own), a
    ``pending`` row sends :func:`app.feedback.prepare.pending`'s statuses."""
    settings = services.settings
    now = now or utcnow()
    claimed_until = claim_until(now, settings.provider_timeout_s * 3)
    with services.sessions.begin() as session:
        claimed = session.execute(
            sa.update(PullDelivery)
            .where(
                PullDelivery.id == delivery_id,
                PullDelivery.state == PENDING,
                due(PullDelivery.next_at, now),
            )
            .values(next_at=claimed_until, attempts=PullDelivery.attempts + 1)
            .returning(
                PullDelivery.attempts,
                PullDelivery.commit_id,
                PullDelivery.report_version,
                PullDelivery.target,
                PullDelivery.payload,
                PullDelivery.created_at,
            )
        ).first()
        if claimed is None:
            return Attempt(attempted=False)
        attempts, commit_id, version, target, payload, created = claimed
        newer_rows = [sa.and_(PullDelivery.target == target, PullDelivery.report_version > version)]
        if target == PENDING_STATUSES:  # the version settled already
            newer_rows.append(
                sa.and_(PullDelivery.target == PREPARE, PullDelivery.report_version >= version)
            )
        newer_version = (
            sa.select(sa.func.max(PullDelivery.report_version))
            .where(PullDelivery.commit_id == commit_id, sa.or_(*newer_rows))
            .scalar_subquery()
        )
        commit, repo, newer = session.execute(  # one round trip: the rows and the check
            sa.select(Commit, Repository, newer_version)
            .join(Repository, Repository.id == Commit.repository_id)
            .where(Commit.id == commit_id)
        ).one()
        if newer is not None:
            finish(session, delivery_id, SUPERSEDED, f"version {newer} is newer")
            return Attempt(attempted=True, state=SUPERSEDED)
        session.expunge(commit)
        session.expunge(repo)
    provider = providers.for_service(repo.service)
    if provider is None:
        with services.sessions.begin() as session:
            reason = f"no {repo.service} credentials: pull-request feedback is off"
            finish(session, delivery_id, SKIPPED, reason)
        return Attempt(attempted=True, state=SKIPPED, error=reason)
    sending = _Claimed(services, provider, delivery_id, repo, commit, version, claimed_until)
    try:
        kind = kind_of(target)
        if kind == PREPARE:
            prepared = prepare(services, provider, repo, commit, version)
            mark = round_of(target)
            return _prepared(services, delivery_id, commit_id, version, prepared, mark)
        if target == PENDING_STATUSES:
            with services.sessions() as session:
                known, in_flight = uploads_known(session, commit_id)
            if not in_flight:  # settled meanwhile: a pending now would never end
                with services.sessions.begin() as session:
                    finish(session, delivery_id, SUPERSEDED, "nothing in flight any more")
                return Attempt(attempted=True, state=SUPERSEDED)
            statuses = pending(services, repo, commit) if pending is not None else ()
            for status in statuses:  # each stands down on its own if a final one is there
                _send_status(sending, status, rank=2 * known)
            with services.sessions.begin() as session:
                finish(session, delivery_id, SENT, None)
            return Attempt(attempted=True, state=SENT)
        if kind.startswith(STATUS_PREFIX):
            return _send_status(sending, payload)
        if kind == COMMENT:
            return _send_comment(sending, payload)
        raise ProviderError(f"unknown delivery target {target!r}")
    except OverBudget as exc:
        return defer(services, delivery_id, f"{exc}", exc.retry_in_s)
    except UnknownCommit as exc:
        services.metrics.feedback_held_back("unknown_commit")
        with services.sessions.begin() as session:
            finish(session, delivery_id, SKIPPED, str(exc)[:2000])
        return Attempt(attempted=True, state=SKIPPED, error=str(exc))
    except (ProviderUnavailable, RateLimited) as exc:
        wait = exc.retry_in_s if isinstance(exc, RateLimited) else 0.0
        return retry(services, delivery_id, attempts, created, str(exc), wait)
    except AccessDenied as exc:
        reason = f"{repo.service} refused access to {repo.name} ({exc.status_code}): {exc}"
        return fail(services, delivery_id, reason)
    except ProviderError as exc:
        return fail(services, delivery_id, str(exc))
    except Exception as exc:  # a bug or unreadable data: recorded and retried, never a loop
        if attempts == 1:
            logger.exception("Pull-request delivery %s (%s) raised", delivery_id, target)
        return retry(services, delivery_id, attempts, created, f"{type(exc).__name__}: {exc}", 0.0)


def _prepared(
    services: Services,
    delivery_id: int,
    commit_id: int,
    version: int,
    prepared: Prepared,
    mark: str = "",
) -> Attempt:
    """Write the rows a prepare asked for (named with its pull-request event
    ``mark``, if any) and hand back those still to send."""
    ids: list[int] = []
    targets = [t.target + mark for t in prepared.targets]
    with services.sessions.begin() as session:
        # Locked: a later settled state of this version (arm_prepare) raises its
        # uploads either before this reads them or after these rows exist.
        armed = session.scalar(
            sa.select(PullDelivery.payload).where(PullDelivery.id == delivery_id).with_for_update()
        )
        uploads = (armed or {}).get("uploads")
        rank = {"rank": 2 * int(uploads) + 1} if uploads is not None else {}
        if prepared.targets:  # one statement for all of them
            now = utcnow()
            insert = conflict_insert(session, PullDelivery).values(
                [
                    {
                        "commit_id": commit_id,
                        "report_version": version,
                        "target": name,
                        "payload": t.payload | rank,
                        "state": PENDING,
                        "created_at": now,
                    }
                    for name, t in zip(targets, prepared.targets, strict=True)
                ]
            )
            # A version prepared again (arm_prepare) sends its rows again.
            session.execute(
                insert.on_conflict_do_update(
                    index_elements=["commit_id", "report_version", "target"],
                    set_={
                        "payload": insert.excluded.payload,
                        "state": PENDING,
                        "next_at": None,
                        "attempts": 0,
                        "error": None,
                    },
                )
            )
        ids = list(
            session.scalars(
                sa.select(PullDelivery.id)
                .where(
                    PullDelivery.commit_id == commit_id,
                    PullDelivery.report_version == version,
                    PullDelivery.target.in_(targets),
                    PullDelivery.state == PENDING,
                )
                .order_by(PullDelivery.id)
            )
        )
        # Older versions' rows still pending, and this version's pending
        # statuses, will never be sent.
        session.execute(
            sa.update(PullDelivery)
            .where(
                PullDelivery.commit_id == commit_id,
                sa.or_(
                    PullDelivery.report_version < version,
                    sa.and_(
                        PullDelivery.report_version == version,
                        PullDelivery.target == PENDING_STATUSES,
                    ),
                ),
                PullDelivery.state == PENDING,
            )
            .values(state=SUPERSEDED, next_at=None, error=f"version {version} reported")
        )
        info = prepared.info | ({"uploads": uploads} if uploads is not None else {})
        session.execute(
            sa.update(PullDelivery)
            .where(PullDelivery.id == delivery_id)
            .values(state=SENT, sent_at=utcnow(), next_at=None, error=None, payload=info)
        )
    return Attempt(attempted=True, state=SENT, followups=ids)


class _Claimed(NamedTuple):
    """A claimed delivery: its row, the commit and version it is for, where it goes."""

    services: Services
    provider: Provider
    delivery_id: int
    repo: Repository
    commit: Commit
    version: int
    #: The claim's ``next_at``: a row made pending again meanwhile (a version
    #: prepared again) no longer has it, and is left for its new delivery.
    claim: datetime


#: Payload keys that order or guard a write, not part of what is sent.
_CONTROL = ("rank", IF_PENDING)


def _digest(payload: dict[str, Any]) -> str:
    return digest({k: v for k, v in payload.items() if k not in _CONTROL})


def _send_status(claimed: _Claimed, payload: dict[str, Any], *, rank: int | None = None) -> Attempt:
    """Write one status, ordered by its rank (module doc): ``rank`` for a
    pending one, the payload's for a final one (2 * version + 1 for a row
    written before ranks)."""
    services, provider, delivery_id, repo, commit, version, claim = claimed
    final = rank is None
    status = Status(
        context=str(payload["context"]),
        state=str(payload["state"]),
        description=str(payload["description"]),
        target_url=str(payload.get("target_url") or ""),
    )
    key = f"status:{commit.id}:{status.context}"
    wanted = _digest(payload)
    sequence = rank if rank is not None else int(payload.get("rank") or 2 * version + 1)
    with services.sessions.begin() as session:
        sent = lock_sent(session, key)
        if (sent.commit_id, sent.report_version) > (commit.id, sequence):
            if final:
                finish(session, delivery_id, SUPERSEDED, "a newer version wrote it", claim=claim)
            return Attempt(attempted=True, state=SUPERSEDED)
        if payload.get(IF_PENDING) and not (
            sent.commit_id == commit.id and sent.report_version % 2 == 0
        ):  # only there to end a pending status, and none is showing
            finish(session, delivery_id, SKIPPED, "no pending status to end", claim=claim)
            return Attempt(attempted=True, state=SKIPPED)
        if sent.digest != wanted:
            provider.set_status(repo.name, commit.sha, status)
        mark(session, sent, commit.id, sequence, wanted)
        finish(session, delivery_id, SENT, None, claim=claim)
    return Attempt(attempted=True, state=SENT)


def _send_comment(claimed: _Claimed, payload: dict[str, Any]) -> Attempt:
    services, provider, delivery_id, repo, commit, version, claim = claimed
    number, body = int(payload["pull"]), str(payload["body"])
    behavior = str(payload.get("behavior") or "default")
    key = comment_key(repo.id, number)
    wanted = digest({"body": body})
    rank = int(payload.get("rank") or version)
    with services.sessions.begin() as session:
        sent = lock_sent(session, key)
        head = session.scalar(
            sa.select(Pull.head_sha).where(Pull.repository_id == repo.id, Pull.number == number)
        )
        if head and head != commit.sha:  # the pull request has moved on to a newer push
            finish(
                session,
                delivery_id,
                SUPERSEDED,
                f"{head[:7]} is the pull request's head",
                claim=claim,
            )
            return Attempt(attempted=True, state=SUPERSEDED)
        if (sent.commit_id == commit.id or not head) and (sent.commit_id, sent.report_version) > (
            commit.id,
            rank,
        ):
            finish(
                session, delivery_id, SUPERSEDED, "a newer report wrote the comment", claim=claim
            )
            return Attempt(attempted=True, state=SUPERSEDED)
        comment_id = sent.comment_id
        if behavior == "spammy":
            comment_id = provider.create_comment(repo.name, number, body)
        elif behavior == "new":
            if comment_id is not None:
                provider.delete_comment(repo.name, number, comment_id)
            comment_id = provider.create_comment(repo.name, number, body)
        elif sent.digest == wanted and comment_id is not None:
            pass  # the comment already says this
        elif comment_id is not None:
            if not provider.update_comment(repo.name, number, comment_id, body):
                # Deleted by someone: ``once`` leaves it deleted, ``default`` posts again.
                comment_id = (
                    None if behavior == "once" else provider.create_comment(repo.name, number, body)
                )
        elif behavior != "once" or sent.digest is None:
            comment_id = provider.create_comment(repo.name, number, body)
        sent.comment_id = comment_id
        mark(session, sent, commit.id, rank, wanted)
        finish(session, delivery_id, SENT, None, claim=claim)
    return Attempt(attempted=True, state=SENT)
