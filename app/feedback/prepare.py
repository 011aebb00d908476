"""What a settled version sends to its pull request: the ``prepare`` step.

Given a commit and its settled report version, with the repository's
provider: find the pull request (the number an upload gave with ``-P``,
else the provider's pull request of the commit: one call), pick the base
as Codecov does, read ``codecov.yml`` at the head (cached per commit), take
the diff (one compare call) and let :mod:`app.pullrequests` compute and
render the statuses and the comment. The outbox (:mod:`app.feedback.delivery`)
then writes each of them.

The pull request read from the provider is stored (``pulls``) and the base
is :func:`app.db.bases.find_base`'s, the rule every other surface uses. A pull
request stored by a provider's event (:mod:`app.notify.pull_events`) whose
head is the commit is read by its number, not searched for by commit. The
repository's default branch is read beside them, at most once an interval
(:mod:`app.feedback.default_branch`).

Only the pull request's head writes its comment (Codecov's
``PullHeadMatchesComparisonHead``): an older push settling late gets its own
statuses. A commit that settled with nothing merged sends no comment, and
its final statuses only where a pending one is showing (Codecov sends
nothing then; covworker ends what it started).A provider's pull-request
event gives the head its feedback again (:mod:`app.notify.pull_events`).
"""

from __future__ import annotations

import logging
import threading
import urllib.parse
from concurrent import futures
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.coverage import codec
from app.coverage.columnar import Part
from app.db.bases import find_base, pull_of, remember_pull
from app.db.models import (
    Commit,
    CommitFlagReport,
    CommitReport,
    PullSent,
    Repository,
    Upload,
    UploadState,
)
from app.db.pull_deliveries import COMMENT, comment_key, status_target
from app.feedback import default_branch
from app.feedback.rows import IF_PENDING, Prepared, Target
from app.figures import remember_fetched_yaml
from app.merge.commit_yaml import load_yaml, lookups
from app.providers import Diff, Provider, ProviderError, PullRequest
from app.pullrequests import diff as pr_diff
from app.pullrequests.comment import CommentLinks, PullInfo, render_comment, should_comment
from app.pullrequests.compare import compare
from app.pullrequests.comparison import FlagInput
from app.pullrequests.config import parse_codecov_yaml
from app.pullrequests.statuses import commit_statuses, pending_statuses, too_many_statuses
from app.runtime.services import Services
from app.testresults.comment import tests_section
from app.testresults.store import TEST_RESULTS_PAYLOAD
from app.testresults.summary import commit_tests, unreadable_uploads

logger = logging.getLogger(__name__)

#: Files of the diff listed on the commit page.
PAGE_FILES = 50

_POOL_LOCK = threading.Lock()

_WRITERS: ThreadPoolExecutor | None = None
#: Provider writes at once per process. Each holds a database connection for
#: its call (the ``pull_sent`` row lock), so with the worker's own threads
#: this stays within the engine's pool (10 + 10 overflow).
WRITERS = 4


def writers() -> ThreadPoolExecutor:
    """The process's threads that write a prepare's statuses and comment at once."""
    global _WRITERS
    with _POOL_LOCK:
        if _WRITERS is None:
            _WRITERS = ThreadPoolExecutor(max_workers=WRITERS, thread_name_prefix="provider-write")
        return _WRITERS


def pending(services: Services, repo: Repository, commit: Commit) -> list[dict[str, Any]]:
    """The ``pending`` statuses while uploads are in flight, no provider read needed:
    ``codecov.yml`` as already read at this commit (else the stored one, else defaults)."""
    key = f"{services.settings.namespace}:prfeedback:yaml:{repo.id}:{commit.sha}"
    cached = services.redis.get(key)
    text = (
        cached.decode("utf-8", "replace") if isinstance(cached, bytes) and cached != b"\0" else None
    )
    with services.sessions() as session:
        if text is None:
            text = session.scalar(
                sa.select(Repository.codecov_yaml).where(Repository.id == repo.id)
            )
        is_pull = pull_of(session, commit) is not None
    config = parse_codecov_yaml(text)
    target_url = commit_url(services, repo, commit.sha)
    return [
        {
            "context": s.context,
            "state": s.state,
            "description": s.description,
            "target_url": target_url,
        }
        for s in pending_statuses(config, is_pull=is_pull)
    ]


def to_pull_diff(diff: Diff) -> pr_diff.Diff:
    """The provider's diff in the comparison's model: a file whose patch the
    provider left out (no patch, and changed lines or no count) is omitted
    ("not measured"); one without a patch and with 0 changes (an empty file
    added, a rename without edits) had none to give and is a file without
    changed lines."""
    result = pr_diff.Diff(truncated=diff.truncated)
    for f in diff.files:
        if f.patch is None and f.changes != 0:
            if f.status != "removed":
                result.omitted.append(f.path)
            continue
        result.files[f.path] = pr_diff.parse_patch(f.path, f.status, f.patch or "", f.previous_path)
    return result


def commit_url(services: Services, repo: Repository, sha: str) -> str:
    base = services.settings.public_url.rstrip("/")
    return f"{base}/{repo.name}/commit/{sha}" if base else ""


def prepare(
    services: Services, provider: Provider, repo: Repository, commit: Commit, version: int
) -> Prepared:
    """The statuses and the comment of ``commit`` at report ``version``."""
    pool = lookups()  # the pull request and codecov.yml at once: one round trip
    number = commit.pullid or _stored_pull_number(services, commit)
    lookup = (
        (provider.pull, repo.name, number)
        if number
        else (provider.pull_for_commit, repo.name, commit.sha)
    )
    pull_future = pool.submit(*lookup)
    branch_future = pool.submit(default_branch.refresh, services, provider, repo)
    try:
        yaml_text = load_yaml(services, provider, repo, commit.sha, pool)
    except ProviderError:  # the attempt ends once its other calls have
        futures.wait((pull_future, branch_future))
        raise
    pull = pull_future.result()
    branch_future.result()
    with services.sessions() as session:
        stored = session.scalar(sa.select(Repository.codecov_yaml).where(Repository.id == repo.id))
        config = parse_codecov_yaml(yaml_text if yaml_text is not None else stored)
        sessions = _merged_uploads(session, commit.id)
        if sessions < config.notify_after_n_builds:
            info = {"waiting": f"{sessions} of {config.notify_after_n_builds} builds"}
            return Prepared(targets=(), info=_pull_info(pull) | info)
        stored_pull = (
            remember_pull(
                session,
                repo.id,
                number=pull.number,
                state=pull.state,
                title=pull.title,
                url=pull.url,
                base_branch=pull.base_branch,
                base_sha=pull.base_sha,
                head_branch=pull.head_branch,
                head_sha=pull.head_sha,
            )
            if pull is not None
            else None
        )
        # The head's codecov.yml, for the merge's carryforward and every surface's rounding.
        remember_fetched_yaml(session, repo.id, yaml_text)
        session.commit()  # the pull is stored for every surface, whatever follows
        # As Codecov's ``only_pulls``: the commit has a pull request covworker knows.
        is_pull = stored_pull is not None or pull_of(session, commit) is not None
        base = find_base(session, commit, stored_pull)
        base_sha = base.sha if base is not None else None
        head_part = _part(session, commit.id)
        base_part = _part(session, base.id) if base is not None else None
        head_flags = _flags(session, commit.id)
        base_flags = _flags(session, base.id) if base is not None else {}
        tests = tests_section(
            commit_tests(session, repo.id, commit.id, services.settings.testresults_flake_runs),
            unreadable_uploads=unreadable_uploads(session, commit.id),
        )
        flag_builds = (
            _flag_builds(session, commit.id, head_flags)
            if sessions
            and any(config.flag_rule(f).after_n_builds for f in _flag_names(config, head_flags))
            else None
        )
    diff_base = pull.base_sha if pull is not None and pull.base_sha else base_sha
    # The pull request's own file list stands in for a comparison cut short
    # only when it is the same diff: the pull's base to this very head.
    same_diff = pull is not None and pull.head_sha == commit.sha and diff_base == pull.base_sha
    diff = (
        provider.compare(
            repo.name, diff_base, commit.sha, pull=pull.number if pull and same_diff else None
        )
        if diff_base
        else None
    )
    pull_diff = to_pull_diff(diff) if diff is not None else None
    comparison = compare(
        head_part,
        base_part,
        pull_diff,
        head_sha=commit.sha,
        base_sha=base_sha,
        head_flags=head_flags,
        base_flags=base_flags,
        config=config,
    )
    status_cap = too_many_statuses(config, list(comparison.flags))
    yaml_errors = (*config.errors, status_cap) if status_cap else config.errors
    target_url = commit_url(services, repo, commit.sha)
    # Nothing merged: the statuses only end the pending ones, and no comment.
    merged_nothing = version == 0
    guard = {IF_PENDING: True} if merged_nothing else {}
    targets: list[Target] = [
        Target(
            status_target(s.context),
            {
                "context": s.context,
                "state": s.state,
                "description": s.description,
                "target_url": target_url,
            }
            | guard,
        )
        for s in commit_statuses(config, comparison, is_pull=is_pull, flag_builds=flag_builds)
    ]
    is_head = pull is not None and (not pull.head_sha or pull.head_sha == commit.sha)
    if (
        pull is not None
        and is_head
        and not merged_nothing
        and should_comment(
            config,
            comparison,
            sessions=sessions,
            comment_exists=_comment_exists(services, repo, pull.number),
        )
    ):
        body = render_comment(
            comparison,
            config,
            pull=PullInfo(
                number=pull.number,
                base_branch=pull.base_branch,
                head_branch=pull.head_branch,
                base_sha=pull.base_sha,  # named when the base has no report
            ),
            links=_links(services, repo, commit, pull),
            yaml_errors=yaml_errors,
            extra_sections=[tests] if tests else (),
        )
        targets.append(
            Target(
                COMMENT,
                {"pull": pull.number, "body": body, "behavior": config.comment.behavior},
            )
        )
    info = _pull_info(pull) | {
        "base": base_sha,
        "patch": comparison.patch_coverage,
        "yaml_errors": [str(e) for e in yaml_errors],
        "diff": _diff_files(comparison, pull_diff, head_part),
        # Files of the diff the provider gave no patch for, and whether its
        # file list was cut short: shown on the commit page as not measured.
        "not_measured": comparison.not_measured[:PAGE_FILES],
        "not_measured_count": len(comparison.not_measured),
        "diff_truncated": comparison.diff_truncated,
    }
    return Prepared(targets=targets, info=info)


def _stored_pull_number(services: Services, commit: Commit) -> int | None:
    """The open pull request a provider's event stored with ``commit`` as its head."""
    with services.sessions() as session:
        stored = pull_of(session, commit)
    return stored.number if stored is not None and stored.state == "open" else None


def _pull_info(pull: PullRequest | None) -> dict[str, Any]:
    if pull is None:
        return {"pull": None}
    return {
        "pull": {
            "number": pull.number,
            "url": pull.url,
            "title": pull.title,
            "base_branch": pull.base_branch,
            "base_sha": pull.base_sha,
            "state": pull.state,
        }
    }


def _diff_files(comparison: Any, diff: pr_diff.Diff | None, head: Part) -> list[dict[str, Any]]:
    """The diff's files with their added lines' states, for the commit page."""
    files = []
    for f in comparison.files.values():
        if not f.in_diff or f.patch is None:
            continue
        added = diff.files[f.path].added if diff is not None and f.path in diff.files else []
        coverable = set(head.files[f.path][0]) if f.path in head.files else set()
        misses, partials = set(f.patch_misses), set(f.patch_partials)
        files.append(
            {
                "path": f.path,
                "patch": {"hits": f.patch.hits, "lines": f.patch.lines},
                "hits": [n for n in added if n in coverable and n not in misses | partials],
                "misses": sorted(misses),
                "partials": sorted(partials),
            }
        )
        if len(files) >= PAGE_FILES:
            break
    return files


def _links(services: Services, repo: Repository, commit: Commit, pull: PullRequest) -> CommentLinks:
    """covworker's pages of ``commit`` under ``COVWORKER_PUBLIC_URL``; without it,
    no links (the comment never links back to the pull request ``pull`` itself)."""
    page = commit_url(services, repo, commit.sha)
    if not page:
        return CommentLinks()
    return CommentLinks(
        report_url=page,
        commit_url=lambda sha: commit_url(services, repo, sha),
        file_url=lambda path: f"{page}/file/{urllib.parse.quote(path)}",
        flags_url=page + "#flags",
        indirect_url=page + "#base-h",
        missing_url=page + "#diff-files",
    )


def _comment_exists(services: Services, repo: Repository, number: int) -> bool:
    with services.sessions() as session:
        return (
            session.scalar(
                sa.select(PullSent.comment_id).where(PullSent.key == comment_key(repo.id, number))
            )
            is not None
        )


def _merged_uploads(session: Session, commit_id: int) -> int:
    """The builds ``after_n_builds`` counts: merged coverage uploads. As Codecov,
    test-results (JUnit) uploads are not builds, though they merge like one."""
    return int(
        session.scalar(
            sa.select(sa.func.count())
            .select_from(Upload)
            .where(
                Upload.commit_id == commit_id,
                Upload.state == UploadState.MERGED,
                Upload.payload_format.is_distinct_from(TEST_RESULTS_PAYLOAD),
            )
        )
        or 0
    )


def _flag_names(config: Any, head_flags: dict[str, FlagInput]) -> set[str]:
    return set(config.flags) | set(head_flags)


def _flag_builds(
    session: Session, commit_id: int, head_flags: dict[str, FlagInput]
) -> dict[str, int]:
    """Coverage uploads per flag at the head, as Codecov counts a flag's
    sessions: the commit's merged uploads naming it, or for a flag carried
    forward, those of the commit it was carried from."""
    counts: dict[str, int] = {}

    def count(commit: Any, only: set[str] | None) -> None:
        for flags in session.scalars(
            sa.select(Upload.flags).where(
                commit,
                Upload.state == UploadState.MERGED,
                Upload.payload_format.is_distinct_from(TEST_RESULTS_PAYLOAD),
            )
        ):
            for flag in set(flags or ()):
                if only is None or flag in only:
                    counts[flag] = counts.get(flag, 0) + 1

    count(Upload.commit_id == commit_id, None)
    carried: dict[str, set[str]] = {}
    for flag, found in head_flags.items():
        if found.carried_from:
            carried.setdefault(found.carried_from, set()).add(flag)
    repository = sa.select(Commit.repository_id).where(Commit.id == commit_id).scalar_subquery()
    for sha, flags in carried.items():
        source = sa.select(Commit.id).where(Commit.repository_id == repository, Commit.sha == sha)
        count(Upload.commit_id.in_(source), flags)
    return counts


def _part(session: Session, commit_id: int) -> Part:
    data = session.scalar(sa.select(CommitReport.report).where(CommitReport.commit_id == commit_id))
    return codec.load_part(data) if data else Part({})


def _flags(session: Session, commit_id: int) -> dict[str, FlagInput]:
    rows = session.execute(
        sa.select(
            CommitFlagReport.flag, CommitFlagReport.report, CommitFlagReport.carried_from
        ).where(CommitFlagReport.commit_id == commit_id)
    ).all()
    return {
        flag: FlagInput(codec.load_part(report), carried_from)
        for flag, report, carried_from in rows
        if report
    }
