"""The repository's pull requests: ``/OWNER/NAME/pulls`` and its JSON.

Every pull request covworker read from the provider (the ``pulls`` rows
feedback and provider events write, :func:`app.db.bases.remember_pull`), newest
update first, each with its head commit as covworker has it: the head's
patch coverage (what feedback's prepare found, as on the commit page), its
change against its base (:func:`app.figures.commit_headline`, the one base
rule) and each commit status as last written or about to be, from the
pull-request outbox (``pull_deliveries``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import sqlalchemy as sa
from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response
from sqlalchemy.orm import Session

from app.db.models import Commit, Pull, PullDelivery, Repository
from app.db.pull_deliveries import STATUS_PREFIX, commit_feedback, kind_of
from app.figures import commit_headline, display_rounding
from app.pullrequests.numbers import DisplayRounding
from app.runtime.services import Services
from app.web.history import Readable
from app.web.pullpages import provider_link

#: Pull requests on one page (and in one JSON answer), newest update first.
PULLS_PER_PAGE = 50


def head_statuses(session: Session, commit_id: int) -> list[dict[str, Any]]:
    """Each commit status of the head's newest feedback: its context, its
    state (``success``, ``failure``, ``pending``, ...) and how its delivery went."""
    version = session.scalar(
        sa.select(sa.func.max(PullDelivery.report_version)).where(
            PullDelivery.commit_id == commit_id
        )
    )
    if version is None:
        return []
    newest: dict[str, PullDelivery] = {}
    for row in session.scalars(
        sa.select(PullDelivery)
        .where(
            PullDelivery.commit_id == commit_id,
            PullDelivery.report_version == version,
            PullDelivery.target.startswith(STATUS_PREFIX),
        )
        .order_by(PullDelivery.id)
    ):
        newest[kind_of(row.target)] = row  # a later round replaces an earlier one
    return [
        {
            "context": str(row.payload.get("context") or kind_of(row.target)[len(STATUS_PREFIX) :]),
            "state": str(row.payload.get("state") or ""),
            "description": str(row.payload.get("description") or ""),
            "delivery": row.state,
        }
        for _, row in sorted(newest.items())
    ]


def pulls_data(session: Session, repo: Repository, offset: int = 0) -> dict[str, Any]:
    pulls = list(
        session.scalars(
            sa.select(Pull)
            .where(Pull.repository_id == repo.id)
            .order_by(Pull.updated_at.desc(), Pull.id.desc())
            .limit(PULLS_PER_PAGE)
            .offset(offset)
        )
    )
    total = session.scalar(
        sa.select(sa.func.count()).select_from(Pull).where(Pull.repository_id == repo.id)
    )
    heads = {p.head_sha for p in pulls if p.head_sha}
    commits = {
        c.sha: c
        for c in session.scalars(
            sa.select(Commit).where(Commit.repository_id == repo.id, Commit.sha.in_(heads))
        )
    }
    rounding = display_rounding(session, repo.id)
    out = []
    for pull in pulls:
        head = commits.get(pull.head_sha or "")
        entry: dict[str, Any] = {
            "number": pull.number,
            "title": pull.title,
            "state": pull.state,
            "url": provider_link(pull.url),
            "base_branch": pull.base_branch,
            "head_branch": pull.head_branch,
            "head": pull.head_sha,
            "head_known": head is not None,
            "updated_at": pull.updated_at.isoformat() if pull.updated_at else None,
            "patch": None,
            "coverage": None,
            "change": None,
            "base_commit": None,
            "statuses": [],
        }
        if head is not None:
            figures = commit_headline(session, head, rounding=rounding).row_json()
            feedback = commit_feedback(session, head.id)
            info = (feedback or {}).get("info") or {}
            entry.update(
                patch=info.get("patch"),
                coverage=figures["coverage"],
                change=figures["change"],
                base_commit=figures["base_commit"],
                statuses=head_statuses(session, head.id),
            )
        out.append(entry)
    return {
        "repository": repo.name,
        "total": total or 0,
        "offset": offset,
        "limit": PULLS_PER_PAGE,
        "rounding": rounding.to_json(),
        "pulls": out,
    }


def pulls_answer(
    services: Services,
    wanted: Readable,
    offset: int,
    render: Callable[[dict[str, Any]], Response],
) -> Response:
    """The pull requests of ``wanted``, rendered by ``render`` (JSON or the page)."""
    with services.sessions() as session:
        data = pulls_data(session, wanted.open(session), min(max(0, offset), 2**31 - 1))
    return render(data)


def add_routes(
    router: APIRouter,
    *,
    services_of: Callable[[Request], Services],
    repo_of: Callable[[Request, str, str], Readable],
    as_json: Callable[[Any], Response],
    page: Callable[..., Response],
) -> None:
    """The page and its JSON (``app/web/router.py`` passes the helpers of
    ``deps`` and ``responses``)."""

    def as_page(data: dict[str, Any]) -> Response:
        return page("pulls.html", data=data, rounding=DisplayRounding(**data["rounding"]))

    @router.get("/api/v1/repos/{owner}/{name}/pulls")
    def api_pulls(request: Request, owner: str, name: str, offset: int = 0) -> Response:
        wanted = repo_of(request, owner, name)
        return pulls_answer(services_of(request), wanted, offset, as_json)

    @router.get("/{owner}/{name}/pulls", response_class=HTMLResponse)
    def pulls_page(request: Request, owner: str, name: str, offset: int = 0) -> Response:
        wanted = repo_of(request, owner, name)
        return pulls_answer(services_of(request), wanted, offset, as_page)
