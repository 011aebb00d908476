"""Webhooks from an outbox: the notification row is the outbox entry.

``notify`` writes the row and returns; delivery is its own step
(``deliver_webhook``, the actor of the same name), with its own schedule,
outside any message's retry budget. An attempt first *claims* the row (one
conditional UPDATE: still undelivered, not failed, due), so two messages for
the same row never POST twice at once; then it POSTs and records the
outcome: delivered, or the attempt, the error and the next due time, with
exponential backoff, until ``webhook_horizon_s`` after the notification
(default 24 h); after that the row is marked failed with the last reason.
A scheduled retry is a delayed message; if Redis loses it, the sweep sends
the overdue rows again (``overdue_webhooks``).

Order and address: a receiver must end with the newest settled state, so
a notification of a commit that has a newer one is never sent (it is
marked superseded), and every attempt goes to the repository's webhook URL
as it is when the attempt is made, not as it was when the commit settled.

Safety: the URL's host is resolved at send time and every address it has
must be public (not loopback, private, link-local, multicast or reserved)
unless ``COVWORKER_WEBHOOK_ALLOW_PRIVATE=true``; the connection goes to
the address that was checked (no second lookup), and redirects are not
followed. Such a refusal fails the delivery for good: retrying cannot
help. The body is signed, ``X-Covworker-Signature: sha256=<hex>``, an
HMAC-SHA256 with the repository's webhook secret. Credentials in a URL
(``https://user:pass@host/``) are sent as Basic authentication and never
logged or stored in an error.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import http.client
import ipaddress
import json
import logging
import secrets
import socket
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import unquote, urlsplit

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.db.models import Commit, Notification, Repository, utcnow
from app.db.outbox import RetryPolicy, claim_until, due, overdue
from app.errors import CovworkerError
from app.figures import commit_headline, stored_totals
from app.queries import current_delta
from app.runtime.services import Services
from app.settings import Settings

logger = logging.getLogger(__name__)

#: Header carrying the body's HMAC-SHA256 with the repository's webhook secret.
SIGNATURE_HEADER = "X-Covworker-Signature"
#: Bytes of a receiver's answer read at most (only its status matters).
ANSWER_BYTES = 64 * 1024


class WebhookFailed(CovworkerError):
    """The webhook did not answer 2xx."""


class WebhookRefused(WebhookFailed):
    """The webhook's address is not one covworker sends to: retrying cannot help."""


def sign(secret: str, body: bytes) -> str:
    """The ``X-Covworker-Signature`` value of ``body``: what a receiver recomputes."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def redact(url: str) -> str:
    """``url`` without its credentials (``https://***@host/``), for logs and errors."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<an unparsable URL>"
    if "@" not in parts.netloc:
        return url
    return parts._replace(netloc="***@" + parts.netloc.rsplit("@", 1)[1]).geturl()


@dataclass(frozen=True, slots=True)
class Attempt:
    """What one ``deliver_webhook`` did."""

    #: False if there was nothing to do (delivered, failed for good, not due,
    #: no URL, superseded by a newer notification of the commit).
    attempted: bool
    delivered: bool = False
    #: Seconds until the next attempt is due; None if there is none.
    retry_in_s: float | None = None
    error: str | None = None


def retry_policy(settings: Settings) -> RetryPolicy:
    return RetryPolicy(
        settings.webhook_min_backoff_s, settings.webhook_max_backoff_s, settings.webhook_horizon_s
    )


def deliver_webhook(
    services: Services, notification_id: int, now: datetime | None = None
) -> Attempt:
    """One attempt at the webhook of notification ``notification_id``, if it is due."""
    settings = services.settings
    now = now or utcnow()
    claimed_until = claim_until(now, settings.webhook_timeout_s)
    with services.sessions.begin() as session:
        superseded = session.execute(
            sa.update(Notification)
            .where(Notification.id == notification_id, *_pending(), _newer_exists(notification_id))
            .values(
                webhook_failed_at=now,
                webhook_next_at=None,
                webhook_error="superseded by a newer notification of the commit",
            )
            .returning(Notification.id)
        ).first()
        if superseded is not None:
            logger.info("Webhook of notification %s superseded: not sent.", notification_id)
            return Attempt(attempted=False)
        claimed = session.execute(
            sa.update(Notification)
            .where(
                Notification.id == notification_id,
                *_pending(),
                due(Notification.webhook_next_at, now),
            )
            .values(
                webhook_next_at=claimed_until, webhook_attempts=Notification.webhook_attempts + 1
            )
            .returning(Notification.webhook_attempts)
        ).first()
        if claimed is None:
            return Attempt(attempted=False)
        attempts = int(claimed[0])
        note, repo, sha = _row(session, notification_id)
        url, secret = _current_webhook(session, note.commit_id)
        payload = _payload(session, repo, sha, note) if url else {}
    if not url:
        return _failed(services, note, attempts, "the repository has no webhook any more", True)
    body = json.dumps(payload).encode()
    try:
        _post(url, body, sign(secret, body), settings)
    except WebhookFailed as exc:
        services.metrics.webhook("failed")
        return _failed(services, note, attempts, str(exc), isinstance(exc, WebhookRefused))
    services.metrics.webhook("delivered")
    with services.sessions.begin() as session:
        session.execute(
            sa.update(Notification)
            .where(Notification.id == notification_id)
            .values(webhook_delivered_at=utcnow(), webhook_next_at=None, webhook_error=None)
        )
    logger.info("Webhook of notification %s delivered (attempt %s).", notification_id, attempts)
    return Attempt(attempted=True, delivered=True)


def overdue_webhooks(session: Session, now: datetime) -> list[int]:
    """Undelivered rows due for a while: their scheduled message was lost."""
    return overdue(session, Notification.id, Notification.webhook_next_at, _pending(), now)


def _pending() -> tuple[sa.ColumnElement[bool], ...]:
    return (
        Notification.webhook_url.is_not(None),
        Notification.webhook_delivered_at.is_(None),
        Notification.webhook_failed_at.is_(None),
    )


def _newer_exists(notification_id: int) -> sa.ColumnElement[bool]:
    """A later notification of the same commit exists (a newer settled state)."""
    newer = sa.orm.aliased(Notification)
    return sa.exists().where(newer.commit_id == Notification.commit_id, newer.id > notification_id)


def _current_webhook(session: Session, commit_id: int) -> tuple[str | None, str]:
    """The repository's webhook URL now, and its secret (made on first use)."""
    repo = session.scalar(
        sa.select(Repository)
        .join(Commit, Commit.repository_id == Repository.id)
        .where(Commit.id == commit_id)
    )
    assert repo is not None  # a notification's commit and repository are never deleted
    if repo.webhook_url and not repo.webhook_secret:
        # Made once: of two first deliveries at once, one sets it, both sign with it.
        session.execute(
            sa.update(Repository)
            .where(Repository.id == repo.id, Repository.webhook_secret.is_(None))
            .values(webhook_secret=new_webhook_secret())
        )
        session.refresh(repo)
    return repo.webhook_url, repo.webhook_secret or ""


def new_webhook_secret() -> str:
    return secrets.token_urlsafe(32)


def _row(session: Session, notification_id: int) -> tuple[Notification, str, str]:
    row = session.execute(
        sa.select(Notification, Repository.name, Commit.sha)
        .join(Commit, Commit.id == Notification.commit_id)
        .join(Repository, Repository.id == Commit.repository_id)
        .where(Notification.id == notification_id)
    ).one()
    session.expunge(row[0])
    return row[0], row[1], row[2]


def _failed(
    services: Services, note: Notification, attempts: int, reason: str, final: bool = False
) -> Attempt:
    now = utcnow()
    policy = retry_policy(services.settings)
    retry_in = None if final else policy.retry_in_s(note.created_at, now, attempts)
    values: dict[str, object] = {"webhook_error": reason[:2000]}
    if retry_in is None:
        values.update(webhook_failed_at=now, webhook_next_at=None)
        logger.warning(
            "Webhook of notification %s failed for good after %s attempts: %s",
            note.id,
            attempts,
            reason,
        )
    else:
        values["webhook_next_at"] = now + timedelta(seconds=retry_in)
        logger.warning(
            "Webhook of notification %s: attempt %s failed (%s); next in %.1f s.",
            note.id,
            attempts,
            reason,
            retry_in,
        )
    with services.sessions.begin() as session:
        session.execute(sa.update(Notification).where(Notification.id == note.id).values(**values))
    return Attempt(attempted=True, retry_in_s=retry_in, error=reason)


def _payload(session: Session, repo: str, sha: str, note: Notification) -> dict[str, object]:
    """The body, as it stands when sent: the comparison against the commit's
    base now (``app.queries.current_delta``: a pull request learned since the
    notification counts; the row is updated to what is sent), and the coverage
    and change as every surface shows them (``app/figures.py``)."""
    commit = session.get_one(Commit, note.commit_id)
    comparison = current_delta(session, commit, note.comparison)
    if comparison is not note.comparison:
        session.execute(
            sa.update(Notification).where(Notification.id == note.id).values(comparison=comparison)
        )
    figures = commit_headline(session, commit, head=stored_totals(note.totals)).to_json()
    return {
        "repository": repo,
        "commit": sha,
        "report_version": note.report_version,
        "totals": note.totals,  # unrounded, as stored
        "coverage_display": figures["coverage_display"],
        "change_display": figures["change_display"],
        "rounding": figures["rounding"],
        "uploads_merged": note.uploads_merged,
        "uploads_errored": note.uploads_errored,
        "comparison": comparison,  # the change against the base (app.queries.commit_delta)
        "test_results": note.test_results,  # totals and failures (app/testresults/summary.py)
    }


def check_address(address: str, allow_private: bool) -> None:
    """Refuse an address that is not on the public internet (unless allowed)."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    mapped = getattr(ip, "ipv4_mapped", None)
    ip = mapped or ip
    if allow_private:
        return
    if not ip.is_global or ip.is_multicast:
        raise WebhookRefused(
            f"webhook address {ip} is not public (loopback, private, link-local or reserved): "
            "set COVWORKER_WEBHOOK_ALLOW_PRIVATE=true to send to your own network"
        )


def resolve(host: str, port: int, allow_private: bool) -> str:
    """The address to connect to: every address of ``host`` is checked."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise WebhookFailed(f"webhook host {host!r} does not resolve: {exc}") from None
    addresses = [str(info[4][0]) for info in infos]
    for address in addresses:
        check_address(address, allow_private)
    return addresses[0]


class _PinnedHTTP(http.client.HTTPConnection):
    """An HTTP connection to the checked address, whatever the name resolves to now."""

    def __init__(self, host: str, port: int, address: str, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self.address = address

    def connect(self) -> None:
        self.sock = socket.create_connection((self.address, self.port), self.timeout)


class _PinnedHTTPS(http.client.HTTPSConnection):
    """HTTPS to the checked address; the certificate is checked for the host's name."""

    def __init__(self, host: str, port: int, address: str, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self.address = address

    def connect(self) -> None:
        sock = socket.create_connection((self.address, self.port), self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)  # type: ignore[attr-defined]


def _post(url: str, body: bytes, signature: str, settings: Settings) -> None:
    shown = redact(url)
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as exc:
        raise WebhookRefused(f"webhook URL {shown} is not valid: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise WebhookRefused(f"webhook URL {shown!r} is not http(s)")
    address = resolve(parts.hostname, port, settings.webhook_allow_private)
    kind = _PinnedHTTPS if parts.scheme == "https" else _PinnedHTTP
    connection = kind(parts.hostname, port, address, settings.webhook_timeout_s)
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "covworker",
        SIGNATURE_HEADER: signature,
    }
    if parts.username is not None:
        user = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
        headers["Authorization"] = "Basic " + base64.b64encode(user.encode()).decode()
    target = parts.path or "/"
    if parts.query:
        target += "?" + parts.query
    try:
        connection.request("POST", target, body=body, headers=headers)
        response = connection.getresponse()
        response.read(ANSWER_BYTES)
        status = response.status
    except (OSError, http.client.HTTPException) as exc:
        raise WebhookFailed(f"webhook {shown} failed: {type(exc).__name__}: {exc}") from None
    finally:
        connection.close()
    if 300 <= status < 400:
        raise WebhookFailed(f"webhook {shown} answered {status} (redirects are not followed)")
    if not 200 <= status < 300:
        raise WebhookFailed(f"webhook {shown} answered {status}")
