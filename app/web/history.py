"""Coverage over time: the repository page's chart and its JSON.

A branch's settled commits (:func:`app.db.bases.settled`, the rule the badge
and the trend use), oldest first, each with its SHA, time and coverage; for
a flag, the coverage of the flag's merged report at each of those commits
that has one. ``/api/v1/repos/OWNER/NAME/coverage?branch=&flag=&limit=``
returns the series; the repository page draws the newest
``HISTORY_POINTS`` of it (``app/web/chart.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, Protocol
from urllib.parse import urlencode

import sqlalchemy as sa
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from markupsafe import Markup, escape
from sqlalchemy.orm import Session

from app.db.bases import settled
from app.db.models import Commit, CommitFlagReport, CommitReport, Repository
from app.figures import display_rounding
from app.pullrequests.numbers import DisplayRounding, shown
from app.runtime.services import Services
from app.web.chart import Point, coverage_chart
from app.web.queries import coverage_of, default_branch
from app.web.render import UNKNOWN, when

#: Points the repository page's chart draws: a year of daily commits.
HISTORY_POINTS = 365
#: Most points one JSON answer returns (``?limit=``).
MAX_HISTORY_POINTS = 5000
#: Longest branch or flag name looked up (the columns' sizes); longer names nothing.
MAX_NAME_CHARS = 255


def _name(value: str | None) -> str | None:
    """A branch or flag from the query, or None when it cannot name one."""
    if value is None or len(value) > MAX_NAME_CHARS or "\x00" in value:
        return None
    return value


def coverage_series(
    session: Session,
    repo: Repository,
    *,
    branch: str | None,
    flag: str | None,
    limit: int = HISTORY_POINTS,
) -> dict[str, Any]:
    """The newest ``limit`` settled commits of ``branch`` (the default branch
    without one), oldest first, with the coverage of the whole report or of
    ``flag``'s; and the flags the repository has, for the page's chooser."""
    branch = branch if branch is not None else default_branch(session, repo)
    if flag is None:
        totals = CommitReport.totals
        query = sa.select(Commit.sha, Commit.created_at, totals)
    else:
        totals = CommitFlagReport.totals
        query = sa.select(Commit.sha, Commit.created_at, totals).join(
            CommitFlagReport,
            sa.and_(CommitFlagReport.commit_id == Commit.id, CommitFlagReport.flag == flag),
        )
    query = query.join(CommitReport, CommitReport.commit_id == Commit.id).where(
        Commit.repository_id == repo.id, settled(session)
    )
    if branch is not None:
        query = query.where(Commit.branch == branch)
    rows = session.execute(
        query.order_by(Commit.created_at.desc(), Commit.id.desc()).limit(limit)
    ).all()
    points = []
    for sha, at, found in reversed(rows):
        coverage = coverage_of(found)
        if coverage is not None:
            points.append(
                {"commit": sha, "at": at.isoformat() if at else None, "coverage": coverage}
            )
    return {
        "repository": repo.name,
        "branch": branch,
        "flag": flag,
        "flags": repository_flags(session, repo),
        "points": points,
    }


def repository_flags(session: Session, repo: Repository) -> list[str]:
    """Every flag a merged report of the repository carries, by name."""
    return list(
        session.scalars(
            sa.select(CommitFlagReport.flag)
            .join(Commit, Commit.id == CommitFlagReport.commit_id)
            .where(Commit.repository_id == repo.id)
            .distinct()
            .order_by(CommitFlagReport.flag)
        )
    )


def chart_points(series: dict[str, Any]) -> list[Point]:
    return [
        Point(p["commit"], datetime.fromisoformat(p["at"]) if p["at"] else None, p["coverage"])
        for p in series["points"]
    ]


class Readable(Protocol):
    """The repository a URL names, opened only if the request may read it
    (``app.web.deps.RepoRequest``)."""

    def open(self, session: Session, *, bare: bool = False) -> Repository: ...


def page_history(request: Request, services: Services, wanted: Readable) -> dict[str, Any]:
    """The repository page's chart: ``?branch=`` and ``?flag=`` as the JSON
    takes them, the series, its SVG and the JSON's address."""
    q = request.query_params
    branch, flag = _name(q.get("branch")), _name(q.get("flag")) or None
    with services.sessions() as session:
        repo = wanted.open(session)
        series = coverage_series(session, repo, branch=branch, flag=flag)
        rounding = display_rounding(session, repo.id)
    label = f"{series['branch'] or 'every branch'}" + (f" \u00b7 flag {flag}" if flag else "")
    series["label"] = label
    points = chart_points(series)
    series["svg"] = Markup(coverage_chart(points, series["repository"], label))
    series["rows"] = points_rows(points, series["repository"], rounding)
    series["json_url"] = f"/api/v1/repos/{series['repository']}/coverage?" + urlencode(
        {k: v for k, v in (("branch", series["branch"]), ("flag", flag)) if v}
    )
    return series


def points_rows(points: list[Point], repo: str, rounding: DisplayRounding) -> Markup:
    """The chart's points as table rows, newest first, written here rather
    than by a Jinja loop (a year of points is 365 rows on every view)."""
    base = escape("/" + repo + "/commit/")
    out = []
    for p in reversed(points):
        sha = escape(p.commit)
        figure = shown(rounding, p.coverage)
        out.append(
            f'<tr><td><a class="sha" href="{base}{sha}">{sha[:8]}</a></td>'
            f"<td>{when(p.at.isoformat() if p.at else None)}</td>"
            f'<td class="num">{UNKNOWN if figure is None else f"{figure}%"}</td></tr>'
        )
    return Markup("\n".join(out))


def coverage_answer(
    services: Services,
    wanted: Readable,
    as_json: Callable[[Any], Response],
    branch: str | None,
    flag: str | None,
    limit: int,
) -> Response:
    """``/api/v1/repos/OWNER/NAME/coverage``: the series, or 400 for a name
    that cannot be a branch or a flag."""
    if (branch is not None and _name(branch) is None) or (flag is not None and _name(flag) is None):
        return JSONResponse(
            {"detail": f"a branch or flag is a name of at most {MAX_NAME_CHARS} characters"},
            status_code=400,
        )
    with services.sessions() as session:
        repo = wanted.open(session)
        data = coverage_series(
            session,
            repo,
            branch=branch,
            flag=flag or None,
            limit=min(max(1, limit), MAX_HISTORY_POINTS),
        )
    return as_json(data)


def add_routes(
    router: APIRouter,
    *,
    services_of: Callable[[Request], Services],
    repo_of: Callable[[Request, str, str], Readable],
    as_json: Callable[[Any], Response],
) -> None:
    """The series' JSON (``app/web/router.py`` passes its helpers: this
    module does not import it, the router imports this one)."""

    @router.get("/api/v1/repos/{owner}/{name}/coverage")
    def api_coverage(
        request: Request,
        owner: str,
        name: str,
        branch: str | None = None,
        flag: str | None = None,
        limit: int = HISTORY_POINTS,
    ) -> Response:
        wanted = repo_of(request, owner, name)
        return coverage_answer(services_of(request), wanted, as_json, branch, flag, limit)
