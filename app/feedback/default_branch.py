"""A repository's default branch: named by a person, else learned from the provider.

Codecov takes a repository's default branch from its provider and lets a
person change it. covworker does the same:

- ``covworker repo set OWNER/NAME --default-branch NAME`` names it
  (:func:`set_default_branch`); a branch named so is kept, whatever the
  provider says, until ``--default-branch ''`` hands it back;
- otherwise the provider's is stored (:func:`learn_default_branch`): read
  with the repository (and with it whether the repository is private,
  ``app.db.repos.learn_provider_private``) (GitHub ``GET /repos/{owner}/{repo}``, GitLab
  ``GET /projects/{id}``, field ``default_branch``) when a version's
  pull-request feedback is prepared, at most once per
  ``COVWORKER_DEFAULT_BRANCH_REFRESH_S`` per repository (:func:`refresh`),
  and from every pull-request event, which carries it.

Where no branch is stored, the pages and the merge take ``main`` or
``master`` (``app/web/queries.py``, ``app/pullrequests/carryforward.py``).
The stored branch is the base branch carryforward falls back to and the
branch whose test runs make the default branch's flake history.
"""

from __future__ import annotations

import logging
import re

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.db.models import Repository
from app.db.repos import learn_provider_private
from app.errors import InvalidUpload
from app.providers import Provider, ProviderError
from app.runtime.services import Services

logger = logging.getLogger(__name__)

#: ``repositories.default_branch_source``: a person named it, or the provider.
SET, PROVIDER = "set", "provider"
#: Longest branch name stored (the column's width).
MAX_BRANCH = 255


#: What git refuses in a branch name (``git check-ref-format``), and whitespace.
_BAD_BRANCH = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]|\.\.|@\{|^[-/.]|[/.]$|\.lock$|//")


def validate_branch(branch: str) -> str:
    """A branch name a person gives ('' hands the choice back), or InvalidUpload."""
    name = branch.strip()
    if name and (len(name) > MAX_BRANCH or _BAD_BRANCH.search(name)):
        raise InvalidUpload(f"{name[:80]!r} is not a git branch name (of at most {MAX_BRANCH})")
    return name


def set_default_branch(session: Session, repository_id: int, branch: str) -> None:
    """A person names the default branch (kept over the provider's); '' hands it back."""
    name = branch.strip()[:MAX_BRANCH]
    session.execute(
        sa.update(Repository)
        .where(Repository.id == repository_id)
        .values(default_branch=name or None, default_branch_source=SET if name else None)
    )


def learn_default_branch(session: Session, repository_id: int, branch: str | None) -> bool:
    """Store the provider's default branch unless a person named one; True if it changed."""
    name = (branch or "").strip()[:MAX_BRANCH]
    if not name:
        return False
    changed = session.execute(
        sa.update(Repository)
        .where(
            Repository.id == repository_id,
            Repository.default_branch_source.is_distinct_from(SET),
            sa.or_(
                Repository.default_branch.is_distinct_from(name),
                Repository.default_branch_source.is_distinct_from(PROVIDER),
            ),
        )
        .values(default_branch=name, default_branch_source=PROVIDER)
    )
    return bool(getattr(changed, "rowcount", 0))


def refresh(services: Services, provider: Provider, repo: Repository) -> None:
    """Read the provider's repository (its default branch, whether it is
    private) if it was not read within the interval.

    One repository read per ``COVWORKER_DEFAULT_BRANCH_REFRESH_S`` (a Redis
    key taken with ``SET NX EX``, whichever process takes it reads); a
    provider that fails is asked again after the interval, and feedback goes
    on without it.
    """
    key = f"{services.settings.namespace}:provider:default-branch:{repo.id}"
    if not services.redis.set(key, b"1", nx=True, ex=services.settings.default_branch_refresh_s):
        return
    try:
        facts = provider.repository(repo.name)
    except ProviderError as exc:
        logger.warning("Repository %s: its default branch could not be read: %s", repo.name, exc)
        return
    branch = facts.default_branch
    with services.sessions.begin() as session:
        if learn_provider_private(session, repo.id, facts.private):
            logger.info(
                "Repository %s: %s on %s.",
                repo.name,
                "private" if facts.private else "public",
                repo.service,
            )
        if learn_default_branch(session, repo.id, branch):
            logger.info(
                "Repository %s: default branch %r (from %s).", repo.name, branch, repo.service
            )
