"""Pull-request feedback from an outbox: statuses and the comment, once per version.

Same rules as the webhooks' outbox (:mod:`app.notify.webhooks`; the
timing rules of both in :mod:`app.db.outbox`), in a table of its
own (``pull_deliveries``), one row per (commit, report version, target):

- ``prepare``: written when the version's notification is; its delivery
  finds the pull request, reads ``codecov.yml``, takes the diff and renders
  everything (:mod:`app.feedback.prfeedback`): at most one pull lookup and
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

import hashlib
import json
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, NamedTuple

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.db import outbox
from app.db.engine import conflict_insert
from app.db.models import (
    FINAL_STATES,
    PENDING_STATES,
    Commit,
    CommitReport,
    Pull,
    PullDelivery,
    PullSent,
    Repository,
    Upload,
    utcnow,
)
from app.db.outbox import RetryPolicy, claim_until, due
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
from app.settings import Settings

logger = logging.getLogger(__name__)

PREPARE = "prepare"
#: ``pending`` statuses while uploads of the commit's next version are in flight.
PENDING_STATUSES = "pending"
COMMENT = "comment"
STATUS_PREFIX = "status:"
#: A final status's payload key: send it only over a pending one of its commit
#: (a commit that settled with nothing merged ends its pending statuses).
IF_PENDING = "if_pending"

PENDING, SENT, SUPERSEDED, SKIPPED, FAILED = "pending", "sent", "superseded", "skipped", "failed"
#: The mark of a pull-request event's rows: ``|pull-<number>-<16 hex digits>``.
_ROUND = re.compile(r"\|pull-[0-9]+-[0-9a-f]{16}$")


@dataclass(frozen=True, slots=True)
class Target:
    """A row ``prepare`` asks for: its target and payload."""

    target: str
    payload: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Prepared:
    """What ``prepare`` found: the rows to write, and what the pages show."""

    targets: Sequence[Target]
    #: Stored on the prepare row: the pull request, base, patch coverage, files.
    info: dict[str, Any]


#: prepare(services, provider, repository, commit, version) -> Prepared
PrepareFn = Callable[[Services, Provider, Repository, Commit, int], Prepared]
#: pending(services, repository, commit) -> the pending statuses' payloads
PendingFn = Callable[[Services, Repository, Commit], Sequence[dict[str, Any]]]


@dataclass(slots=True)
class Attempt:
    """What one delivery attempt did."""

    attempted: bool
    state: str = PENDING
    retry_in_s: float | None = None
    error: str | None = None
    #: Rows written by a prepare, to deliver next.
    followups: list[int] = field(default_factory=list)


def retry_policy(settings: Settings) -> RetryPolicy:
    return RetryPolicy(
        settings.pr_delivery_min_backoff_s,
        settings.pr_delivery_max_backoff_s,
        settings.pr_delivery_horizon_s,
    )


def status_target(context: str) -> str:
    return STATUS_PREFIX + context


def comment_key(repository_id: int, number: int) -> str:
    """``pull_sent``'s key of a pull request's comment."""
    return f"comment:{repository_id}:{number}"


def pull_round(number: int, base_branch: str, base_sha: str | None) -> str:
    """The mark of the rows a pull request's event asks for at its base."""
    key = hashlib.sha256(f"{base_branch}\0{base_sha or ''}".encode()).hexdigest()[:16]
    return f"|pull-{number}-{key}"


def round_of(target: str) -> str:
    """The pull-request event mark of a row's target ('' for a version's own rows)."""
    found = _ROUND.search(target)
    return found[0] if found else ""


def kind_of(target: str) -> str:
    """A row's target without its pull-request event mark."""
    return target[: len(target) - len(round_of(target))]


def digest(payload: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def uploads_known(session: Session, commit_id: int) -> tuple[int, int]:
    """(uploads known, uploads in flight) of the commit: the writes' rank (module doc).

    An ``awaiting`` upload (a presigned PUT not arrived) is neither."""
    known, in_flight = session.execute(
        sa.select(
            sa.func.count(),
            sa.func.count().filter(Upload.state.in_(PENDING_STATES)),
        ).where(Upload.commit_id == commit_id, Upload.state.in_((*PENDING_STATES, *FINAL_STATES)))
    ).one()
    return int(known or 0), int(in_flight or 0)


def arm_prepare(
    session: Session, commit_id: int, version: int, uploads: int, *, again: bool
) -> int | None:
    """The ``prepare`` row of the commit's settled ``version`` with ``uploads``
    uploads final, pending: created, or (``again``) made pending again if it ran
    already (a later settled state of the same version, a changed pull request).
    Its id, or None when it is not pending. In the caller's transaction: the
    notification that settles the state writes it with itself."""
    _insert_ignore(
        session,
        PullDelivery,
        {
            "commit_id": commit_id,
            "report_version": version,
            "target": PREPARE,
            "payload": {"uploads": uploads},
            "state": PENDING,
            "created_at": utcnow(),
        },
    )
    row = session.execute(
        sa.select(PullDelivery.id, PullDelivery.state, PullDelivery.payload)
        .where(
            PullDelivery.commit_id == commit_id,
            PullDelivery.report_version == version,
            PullDelivery.target == PREPARE,
        )
        .with_for_update()
    ).one()
    payload = dict(row.payload or {})
    if row.state == PENDING:
        if int(payload.get("uploads") or 0) < uploads:
            payload["uploads"] = uploads
            session.execute(
                sa.update(PullDelivery).where(PullDelivery.id == row.id).values(payload=payload)
            )
        return int(row.id)
    if not again:
        return None
    session.execute(
        sa.update(PullDelivery)
        .where(PullDelivery.id == row.id)
        .values(
            state=PENDING,
            next_at=None,
            attempts=0,
            error=None,
            payload=payload | {"uploads": max(uploads, int(payload.get("uploads") or 0))},
        )
    )
    return int(row.id)


def drop_orphan_pending(session: Session, commit_id: int, version: int) -> None:
    """A commit settled at ``version``: ``pending`` rows for a later version will
    never see it (their uploads failed); removed, so the next uploads in flight
    get a pending row of their own."""
    session.execute(
        sa.delete(PullDelivery).where(
            PullDelivery.commit_id == commit_id,
            PullDelivery.target == PENDING_STATUSES,
            PullDelivery.report_version > version,
        )
    )


def enqueue_prepare(services: Services, commit_id: int, version: int) -> int | None:
    """The version's ``prepare`` row (created once); None if it is not pending.

    The notifier writes it with the notification (:func:`arm_prepare`); this is
    for a caller that has only the commit and version."""
    with services.sessions.begin() as session:
        known, _ = uploads_known(session, commit_id)
        return arm_prepare(session, commit_id, version, known, again=False)


def enqueue_pending(services: Services, commit_id: int) -> int | None:
    """A ``pending`` row for the version the commit's uploads in flight will make.

    None when nothing is in flight, or the row exists already (one per version).
    """
    with services.sessions.begin() as session:
        # The version first, then whether anything is in flight: an upload
        # still in flight after the version was read is merged into a later
        # one, so the pending row's version never passes the version that
        # settles (a final status of version v outranks pending ones up to v).
        current = session.scalar(
            sa.select(CommitReport.version).where(CommitReport.commit_id == commit_id)
        )
        if not uploads_known(session, commit_id)[1]:
            return None
        version = (current or 0) + 1
        inserted = session.execute(
            _insert_ignore_stmt(
                session,
                PullDelivery,
                {
                    "commit_id": commit_id,
                    "report_version": version,
                    "target": PENDING_STATUSES,
                    "payload": {},
                    "state": PENDING,
                    "created_at": utcnow(),
                },
            ).returning(PullDelivery.id)
        ).first()
    return int(inserted[0]) if inserted is not None else None


def deliver(
    services: Services,
    providers: Providers,
    delivery_id: int,
    prepare: PrepareFn,
    now: datetime | None = None,
    pending: PendingFn | None = None,
) -> Attempt:
    """One attempt at delivery row ``delivery_id``, if it is due."""
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
            _finish(session, delivery_id, SUPERSEDED, f"version {newer} is newer")
            return Attempt(attempted=True, state=SUPERSEDED)
        session.expunge(commit)
        session.expunge(repo)
    provider = providers.for_service(repo.service)
    if provider is None:
        with services.sessions.begin() as session:
            reason = f"no {repo.service} credentials: pull-request feedback is off"
            _finish(session, delivery_id, SKIPPED, reason)
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
                    _finish(session, delivery_id, SUPERSEDED, "nothing in flight any more")
                return Attempt(attempted=True, state=SUPERSEDED)
            statuses = pending(services, repo, commit) if pending is not None else ()
            for status in statuses:  # each stands down on its own if a final one is there
                _send_status(sending, status, rank=2 * known)
            with services.sessions.begin() as session:
                _finish(session, delivery_id, SENT, None)
            return Attempt(attempted=True, state=SENT)
        if kind.startswith(STATUS_PREFIX):
            return _send_status(sending, payload)
        if kind == COMMENT:
            return _send_comment(sending, payload)
        raise ProviderError(f"unknown delivery target {target!r}")
    except OverBudget as exc:
        return _defer(services, delivery_id, f"{exc}", exc.retry_in_s)
    except UnknownCommit as exc:
        services.metrics.feedback_held_back("unknown_commit")
        with services.sessions.begin() as session:
            _finish(session, delivery_id, SKIPPED, str(exc)[:2000])
        return Attempt(attempted=True, state=SKIPPED, error=str(exc))
    except (ProviderUnavailable, RateLimited) as exc:
        wait = exc.retry_in_s if isinstance(exc, RateLimited) else 0.0
        return _retry(services, delivery_id, attempts, created, str(exc), wait)
    except AccessDenied as exc:
        reason = f"{repo.service} refused access to {repo.name} ({exc.status_code}): {exc}"
        return _fail(services, delivery_id, reason)
    except ProviderError as exc:
        return _fail(services, delivery_id, str(exc))
    except Exception as exc:  # a bug or unreadable data: recorded and retried, never a loop
        if attempts == 1:
            logger.exception("Pull-request delivery %s (%s) raised", delivery_id, target)
        return _retry(services, delivery_id, attempts, created, f"{type(exc).__name__}: {exc}", 0.0)


def overdue(session: Session, now: datetime) -> list[int]:
    """Pending rows due for a while: their scheduled message was lost."""
    return outbox.overdue(
        session, PullDelivery.id, PullDelivery.next_at, (PullDelivery.state == PENDING,), now
    )


def commit_feedback(session: Session, commit_id: int) -> dict[str, Any] | None:
    """The newest version's feedback of a commit: what it found and each row's state.

    For ``covworker status``, the commit page and ``/-/ops``.
    """
    rows = list(
        session.scalars(
            sa.select(PullDelivery)
            .where(PullDelivery.commit_id == commit_id)
            .order_by(PullDelivery.report_version.desc(), PullDelivery.id)
        )
    )
    if not rows:
        return None
    version = rows[0].report_version
    newest = [r for r in rows if r.report_version == version]
    # The version's own prepare, or the last a pull-request event asked for, and its rows.
    prepares = [r for r in newest if kind_of(r.target) == PREPARE]
    sent = [r for r in prepares if r.state == SENT]
    prepare = max(sent or prepares, key=lambda r: r.id) if prepares else None
    mark = round_of(prepare.target) if prepare is not None else ""
    return {
        "report_version": version,
        "info": dict(prepare.payload) if prepare is not None else {},
        "deliveries": [
            {
                "target": kind_of(r.target),
                "state": r.state,
                "attempts": r.attempts,
                "error": r.error,
                "next_at": r.next_at.isoformat() if r.next_at and r.state == PENDING else None,
            }
            for r in newest
            if round_of(r.target) == mark
        ],
    }


def delivery_counts(session: Session) -> dict[str, int]:
    """Rows by state, for ``/-/ops``."""
    return {
        str(state): int(n)
        for state, n in session.execute(
            sa.select(PullDelivery.state, sa.func.count()).group_by(PullDelivery.state)
        ).all()
    }


def recent_failures(session: Session, limit: int = 20) -> list[dict[str, Any]]:
    """The newest failed or retrying rows, with their reasons, for ``/-/ops``."""
    rows = session.execute(
        sa.select(PullDelivery, Commit.sha, Repository.name)
        .join(Commit, Commit.id == PullDelivery.commit_id)
        .join(Repository, Repository.id == Commit.repository_id)
        .where(PullDelivery.error.is_not(None), PullDelivery.state.in_((PENDING, FAILED)))
        .order_by(PullDelivery.id.desc())
        .limit(limit)
    ).all()
    return [
        {
            "repository": name,
            "commit": sha,
            "report_version": d.report_version,
            "target": d.target,
            "state": d.state,
            "attempts": d.attempts,
            "error": d.error,
        }
        for d, sha, name in rows
    ]


# -- the steps -----------------------------------------------------------------


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
        sent = _lock_sent(session, key)
        if (sent.commit_id, sent.report_version) > (commit.id, sequence):
            if final:
                _finish(session, delivery_id, SUPERSEDED, "a newer version wrote it", claim=claim)
            return Attempt(attempted=True, state=SUPERSEDED)
        if payload.get(IF_PENDING) and not (
            sent.commit_id == commit.id and sent.report_version % 2 == 0
        ):  # only there to end a pending status, and none is showing
            _finish(session, delivery_id, SKIPPED, "no pending status to end", claim=claim)
            return Attempt(attempted=True, state=SKIPPED)
        if sent.digest != wanted:
            provider.set_status(repo.name, commit.sha, status)
        _mark(session, sent, commit.id, sequence, wanted)
        _finish(session, delivery_id, SENT, None, claim=claim)
    return Attempt(attempted=True, state=SENT)


def _send_comment(claimed: _Claimed, payload: dict[str, Any]) -> Attempt:
    services, provider, delivery_id, repo, commit, version, claim = claimed
    number, body = int(payload["pull"]), str(payload["body"])
    behavior = str(payload.get("behavior") or "default")
    key = comment_key(repo.id, number)
    wanted = digest({"body": body})
    rank = int(payload.get("rank") or version)
    with services.sessions.begin() as session:
        sent = _lock_sent(session, key)
        head = session.scalar(
            sa.select(Pull.head_sha).where(Pull.repository_id == repo.id, Pull.number == number)
        )
        if head and head != commit.sha:  # the pull request has moved on to a newer push
            _finish(
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
            _finish(
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
        _mark(session, sent, commit.id, rank, wanted)
        _finish(session, delivery_id, SENT, None, claim=claim)
    return Attempt(attempted=True, state=SENT)


# -- rows ------------------------------------------------------------------------


def _finish(
    session: Session,
    delivery_id: int,
    state: str,
    error: str | None,
    *,
    claim: datetime | None = None,
) -> None:
    """End the row in ``state``; with ``claim``, only if the row still holds it."""
    values: dict[str, Any] = {"state": state, "next_at": None, "error": error}
    if state == SENT:
        values["sent_at"] = utcnow()
    where = [PullDelivery.id == delivery_id]
    if claim is not None:
        where.append(PullDelivery.next_at == claim)
    session.execute(sa.update(PullDelivery).where(*where).values(**values))


def _retry(
    services: Services,
    delivery_id: int,
    attempts: int,
    created: datetime,
    reason: str,
    wait_s: float,
) -> Attempt:
    now = utcnow()
    retry_in = retry_policy(services.settings).retry_in_s(created, now, attempts, wait_s)
    if retry_in is None:
        return _fail(services, delivery_id, f"gave up after {attempts} attempts: {reason}")
    with services.sessions.begin() as session:
        session.execute(
            sa.update(PullDelivery)
            .where(PullDelivery.id == delivery_id)
            .values(next_at=now + timedelta(seconds=retry_in), error=reason[:2000])
        )
    logger.warning(
        "Pull-request delivery %s: attempt %s failed (%s); next in %.1f s.",
        delivery_id,
        attempts,
        reason,
        retry_in,
    )
    return Attempt(attempted=True, retry_in_s=retry_in, error=reason)


def _defer(services: Services, delivery_id: int, reason: str, wait_s: float) -> Attempt:
    """The repository is over its budget of provider calls: the row waits until
    the budget allows a call, without counting this as an attempt, and never
    fails for the wait (a repository over its budget gets its feedback late,
    not never)."""
    services.metrics.feedback_held_back("over_budget")
    with services.sessions.begin() as session:
        session.execute(
            sa.update(PullDelivery)
            .where(PullDelivery.id == delivery_id)
            .values(
                next_at=utcnow() + timedelta(seconds=wait_s),
                attempts=PullDelivery.attempts - 1,  # the claim counted one
                error=reason[:2000],
            )
        )
    logger.warning("Pull-request delivery %s deferred %.1f s: %s", delivery_id, wait_s, reason)
    return Attempt(attempted=True, retry_in_s=wait_s, error=reason)


def _fail(services: Services, delivery_id: int, reason: str) -> Attempt:
    with services.sessions.begin() as session:
        _finish(session, delivery_id, FAILED, reason[:2000])
    logger.warning("Pull-request delivery %s failed: %s", delivery_id, reason)
    return Attempt(attempted=True, state=FAILED, error=reason)


def _lock_sent(session: Session, key: str) -> PullSent:
    """The key's row, created if missing and locked until the transaction ends.

    One statement: an upsert whose no-op update takes the row lock (as
    ``SELECT ... FOR UPDATE`` would) and returns the row.
    """
    statement = (
        conflict_insert(session, PullSent)
        .values(key=key, commit_id=0, report_version=-1, updated_at=utcnow())
        .on_conflict_do_update(index_elements=[PullSent.key], set_={"key": key})
        .returning(PullSent)
    )
    return session.scalars(
        sa.select(PullSent).from_statement(statement).execution_options(populate_existing=True)
    ).one()


def _mark(session: Session, sent: PullSent, commit_id: int, version: int, wanted: str) -> None:
    sent.commit_id, sent.report_version, sent.digest = commit_id, version, wanted
    sent.updated_at = utcnow()


def _insert_ignore_stmt(session: Session, model: Any, values: dict[str, Any]) -> Any:
    return conflict_insert(session, model).values(**values).on_conflict_do_nothing()


def _insert_ignore(session: Session, model: Any, values: dict[str, Any]) -> None:
    session.execute(_insert_ignore_stmt(session, model, values))
