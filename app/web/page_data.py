"""What a page and its JSON show: one data function per page
(``commit_data``, ...), read by the page (a template) and its JSON alike."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlencode

from fastapi import Request
from sqlalchemy.orm import Session

from app.db.models import Commit, Repository
from app.figures import display_rounding
from app.runtime.services import Services
from app.web import access, lines, pullpages, queries, signin, tree
from app.web.deps import NotVisible, RepoRequest, bounded, int_arg, report_cache
from app.web.reports import ReportCache
from app.web.tests import commit_tests_data


def repositories_data(request: Request, services: Services) -> list[dict[str, Any]]:
    hashes = access.presented_hashes(request.headers, request.cookies)
    with services.sessions() as session:
        visible = access.readable_private_ids(session, hashes)
        visible |= signin.readable_ids(request, session)
        return queries.repositories(session, visible)


@contextmanager
def _opened(
    request: Request, services: Services, wanted: RepoRequest
) -> Iterator[tuple[Session, ReportCache, Repository]]:
    """A session, the app's report cache and the repository the request names
    (``NotVisible`` if it may not see it): what a repository's pages read."""
    cache = report_cache(request, services)
    with services.sessions() as session:
        yield session, cache, wanted.open(session)


#: Commits the repository page lists at once (its chart shows the year; the
#: JSON lists 50): each row is its base looked up, a few queries.
REPOSITORY_PAGE_COMMITS = 20


def commits_data(
    request: Request, services: Services, wanted: RepoRequest, offset: int, limit: int = 50
) -> dict[str, Any]:
    with _opened(request, services, wanted) as (session, cache, repo):
        return queries.repository_commits(session, cache, repo, offset=bounded(offset), limit=limit)


def commit_data(
    request: Request, services: Services, wanted: RepoRequest, sha: str
) -> dict[str, Any]:
    with _opened(request, services, wanted) as (session, cache, repo):
        found = _visible_commit(session, repo, sha)
        data = queries.commit_page(session, cache, repo, found, **_table_args(request))
        data["tests"] = commit_tests_data(services, session, repo, found)  # app/testresults
        # What the Git provider said (app/web/pullpages.py).
        data["pull_feedback"] = pullpages.commit_pull(session, found)
        data["tree"] = tree.commit_tree(session, cache, found, data, dict(request.query_params))
        return data


def file_data(
    request: Request, services: Services, wanted: RepoRequest, sha: str, path: str
) -> dict[str, Any]:
    with _opened(request, services, wanted) as (session, cache, repo):
        found = _visible_commit(session, repo, sha)
        start = int_arg(request, "from", 1)
        data = lines.file_page(session, cache, repo, found, path, start=start)
        if data is None:
            raise NotVisible
        data["rounding"] = display_rounding(session, repo.id).to_json()
        data["added"] = pullpages.added_lines(session, found, path)  # the pull request's patch
    # the source at the commit, through the provider
    source = pullpages.file_source(services, repo, found, path)
    page = pullpages.source_page(source, data["lines"], data["window"], start) if source else None
    data["source"] = page["rows"] if page else None
    data["source_window"] = {k: v for k, v in page.items() if k != "rows"} if page else None
    if page:  # the stops of the rows shown: a link to a row not on the page leads nowhere
        data["stops"] = [s for s in data["stops"] if page["from"] <= s <= page["to"]]
    return data


def file_lead(
    request: Request, services: Services, wanted: RepoRequest, sha: str, path: str
) -> str | None:
    """The file page's address that ``?lead=next&at=LINE`` (or ``previous``)
    leads to: the run of missed or partial lines past the page
    (:func:`app.web.lines.lead_target`), the page's other arguments kept;
    None when the query asks for no lead."""
    query = request.query_params
    direction = query.get("lead")
    if direction not in ("next", "previous"):
        return None
    with _opened(request, services, wanted) as (session, cache, repo):
        found = _visible_commit(session, repo, sha)
        landing = lines.lead_target(
            session, cache, found, path, direction, max(1, int_arg(request, "at", 1))
        )
    if landing is None:
        raise NotVisible
    kept = {k: v for k, v in query.items() if k not in ("lead", "at", "from")}
    kept["from"] = str(landing.start)
    return f"{request.url.path}?{urlencode(kept)}#{landing.fragment}"


def _visible_commit(session: Session, repo: Repository, sha: str) -> Commit:
    commit = queries.find_commit(session, repo, sha)
    if commit is None:
        raise NotVisible
    return commit


def _table_args(request: Request) -> dict[str, Any]:
    q = request.query_params
    try:
        number = int(q.get("page", "1"))
    except ValueError:
        number = 1
    return {
        "sort": q.get("sort", "name"),
        "descending": q.get("order", "asc") == "desc",
        "query": q.get("q", "")[:200],
        "page": number,
    }
