"""What the pages show from the Git provider: the pull request, the diff, the source.

The commit page shows what the newest version's pull-request feedback
found (``pull_deliveries``' prepare row, :mod:`app.feedback.delivery`):
the pull request with its base and link, patch coverage, and the diff's
files with each added line marked hit, partial or miss, and each status or
comment delivery with why one failed. The file page shows the file's source
at the commit, fetched through the provider once and kept in Redis for
``COVWORKER_PROVIDER_SOURCE_CACHE_S``; the template escapes every line. A
public repository's source is shown only once the provider has said it is
public (:func:`_may_show_source`).
Without a provider (or when it cannot be reached) the pages are as before.
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.db.models import Commit, PullDelivery, Repository
from app.db.pull_deliveries import COMMENT, SENT, commit_feedback, kind_of
from app.db.repos import learn_provider_private
from app.providers import ContentTooLarge, Provider, ProviderError
from app.runtime.services import Services
from app.web import access

logger = logging.getLogger(__name__)

#: Seconds between two questions to the provider about whether a repository
#: whose privacy is unknown is private (the file page's, :func:`_may_show_source`).
PRIVACY_ASK_S = 60
#: Largest source file shown (bytes); past it the page shows lines only.
MAX_SOURCE_BYTES = 1024 * 1024
#: Source rows the file page shows per GET at most.
SOURCE_PAGE_ROWS = 1000
_MISSING = b"\0missing"


#: Schemes a provider's link to a pull request may have; anything else is not linked.
LINK_SCHEMES = ("https://", "http://")


def provider_link(url: str | None) -> str | None:
    """The provider's page of a pull request, if it is a web address
    (never a ``javascript:`` one a provider or a forged event could give)."""
    return url if url and url.lower().startswith(LINK_SCHEMES) else None


def _linked(pull: dict[str, Any] | None) -> dict[str, Any] | None:
    """The stored pull request with its link kept only if it is a web address."""
    return None if pull is None else {**pull, "url": provider_link(pull.get("url"))}


def commit_pull(session: Session, commit: Commit) -> dict[str, Any] | None:
    """The commit page's pull-request section, or None if feedback never ran."""
    feedback = commit_feedback(session, commit.id)
    if feedback is None:
        return None
    info = feedback.get("info") or {}
    files = []
    for f in info.get("diff") or []:
        marks = {n: "hit" for n in f.get("hits", [])}
        marks.update({n: "partial" for n in f.get("partials", [])})
        marks.update({n: "miss" for n in f.get("misses", [])})
        patch = f.get("patch") or {}
        lines = int(patch.get("lines") or 0)
        files.append(
            {
                "path": f["path"],
                "coverage": 100.0 * int(patch.get("hits") or 0) / lines if lines else None,
                "lines": [{"line": n, "kind": marks[n]} for n in sorted(marks)],
            }
        )
    return {
        "pull": _linked(info.get("pull")),
        "base": info.get("base"),
        "patch": info.get("patch"),
        "waiting": info.get("waiting"),
        "yaml_errors": info.get("yaml_errors") or [],
        "files": files,
        # The diff's files patch coverage could not include (no patch from the
        # provider), at most the first 50 named, and whether its list was cut.
        "not_measured": list(info.get("not_measured") or []),
        "not_measured_count": int(info.get("not_measured_count") or 0),
        "diff_truncated": bool(info.get("diff_truncated")),
        "deliveries": feedback["deliveries"],
        "comment": last_comment(session, commit.id),
    }


def last_comment(session: Session, commit_id: int) -> dict[str, Any] | None:
    """The pull-request comment this commit last sent (its Markdown, when),
    or None if it sent none: only a pull request's head comments."""
    row = session.scalar(
        sa.select(PullDelivery)
        .where(
            PullDelivery.commit_id == commit_id,
            PullDelivery.target.startswith(COMMENT),
            PullDelivery.state == SENT,
        )
        .order_by(PullDelivery.sent_at.desc(), PullDelivery.id.desc())
        .limit(1)
    )
    if row is None or kind_of(row.target) != COMMENT:
        return None
    return {
        "body": str(row.payload.get("body") or ""),
        "sent_at": row.sent_at.isoformat() if row.sent_at else None,
        "report_version": row.report_version,
    }


def added_lines(session: Session, commit: Commit, path: str) -> list[int]:
    """The instrumented lines the pull request's patch adds to ``path`` (what
    the commit page's diff section marks), none if the commit is no pull
    request's or feedback never ran."""
    feedback = commit_feedback(session, commit.id)
    diff = ((feedback or {}).get("info") or {}).get("diff") or []
    for f in diff:
        if f.get("path") == path:
            found = [*f.get("hits", []), *f.get("partials", []), *f.get("misses", [])]
            return sorted(int(n) for n in found)
    return []


def file_source(
    services: Services, repo: Repository, commit: Commit, path: str
) -> list[str] | None:
    """The file's lines at the commit through the provider; None if unavailable."""
    provider = services.providers.for_service(repo.service)
    if provider is None or not _may_show_source(services, provider, repo):
        return None
    digest = hashlib.sha256(path.encode()).hexdigest()[:32]
    key = f"{services.settings.namespace}:source:{repo.id}:{commit.sha}:{digest}"
    try:
        cached = services.redis.get(key)
    except Exception:  # the cache is optional; the provider still answers
        cached = None
    if isinstance(cached, bytes):
        data: bytes | None = None if cached == _MISSING else cached
    else:
        try:
            data = provider.file_contents(repo.name, path, commit.sha, max_bytes=MAX_SOURCE_BYTES)
        except ContentTooLarge:  # read no further than the bound; remembered as absent
            data = None
        except ProviderError as exc:
            logger.info("No source for %s@%s:%s: %s", repo.name, commit.sha[:7], path, exc)
            return None
        try:
            services.redis.set(
                key,
                data if data is not None else _MISSING,
                ex=services.settings.provider_source_cache_s,
            )
        except Exception:
            logger.debug("Source cache unavailable", exc_info=True)
    if data is None or b"\0" in data[:8000]:  # absent, too large, or binary
        return None
    return data.decode("utf-8", "replace").splitlines()


def _may_show_source(services: Services, provider: Provider, repo: Repository) -> bool:
    """Whether the reader may see the repository's source.

    The request passed the page's access check with the repository as it was
    read: a private one (``--private``, or private on the provider) to a
    reader it admits, a public one to anyone. A repository whose privacy the
    provider has not told yet shows no source until it has: the provider is
    asked now (at most once per ``PRIVACY_ASK_S`` per repository, whatever
    the pages' traffic), and the source shown only if it says public, so code
    private on the provider never reaches a reader the check did not admit.
    """
    if access.is_private(repo) or repo.provider_private is False:
        return True
    key = f"{services.settings.namespace}:provider:privacy:{repo.id}"
    if not services.redis.set(key, b"1", nx=True, ex=PRIVACY_ASK_S):
        return False
    try:
        facts = provider.repository(repo.name)
    except ProviderError as exc:
        logger.info("Repository %s: whether it is private could not be read: %s", repo.name, exc)
        return False
    with services.sessions.begin() as session:
        learn_provider_private(session, repo.id, facts.private)
    return not facts.private


def source_page(
    source: list[str], lines: list[dict[str, Any]], window: dict[str, Any], start: int = 1
) -> dict[str, Any]:
    """The source rows one GET of the file page shows: from line ``start``
    (the page's ``?from=``), at most ``SOURCE_PAGE_ROWS`` of them and none
    past the page's window of instrumented ``lines`` (whose marks they
    carry: hit, partial, miss), with where the previous and next rows begin.
    A 1 MiB file of a million empty lines is a thousand GETs of a thousand
    rows, never one page of a million."""
    by_line = {r["line"]: r for r in lines}
    total = len(source)
    first = min(max(start, 1), max(total, 1))
    last = min(total, first + SOURCE_PAGE_ROWS - 1)
    if window.get("next_from"):  # the marks of the next window's lines are not read
        last = min(last, max(first, window["next_from"] - 1))
    rows = []
    for n, text in enumerate(source[first - 1 : last], start=first):
        r = by_line.get(n)
        rows.append(
            {
                "line": n,
                "text": text,
                "kind": r["kind"] if r else "",
                "hits": r["hits"] if r else None,
            }
        )
    return {
        "rows": rows,
        "from": first,
        "to": last,
        "total": total,
        "previous_from": max(1, first - SOURCE_PAGE_ROWS) if first > 1 else None,
        "next_from": last + 1 if last < total else None,
    }
