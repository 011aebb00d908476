"""Accepting uploads: validate, store the raw bytes in Postgres, mark them in Redis."""

from __future__ import annotations

import re
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.db.models import Commit, CommitReport, Repository, Upload, UploadState
from app.errors import InvalidUpload
from app.services import Services

#: OWNER/NAME, or GROUP/SUBGROUP/.../NAME as GitLab nests them.
REPO_NAME = re.compile(r"^[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+){1,8}$")
COMMIT_SHA = re.compile(r"^[0-9a-f]{7,64}$")
FLAG = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


def validate_repo(name: str) -> str:
    if not REPO_NAME.match(name) or len(name) > 255:
        raise InvalidUpload(f"repository {name!r} is not of the form OWNER/NAME")
    return name


def validate_sha(sha: str) -> str:
    lowered = sha.lower()
    if not COMMIT_SHA.match(lowered):
        raise InvalidUpload(f"commit {sha!r} is not a hex SHA (7 to 64 hex digits)")
    return lowered


def validate_flags(flags: list[str]) -> list[str]:
    for flag in flags:
        if not FLAG.match(flag):
            raise InvalidUpload(f"flag {flag!r} must be 1-64 letters, digits, '_', '.' or '-'")
    return flags


@dataclass(frozen=True, slots=True)
class Accepted:
    repoid: int
    commitid: int
    upload_ids: list[int]


def get_or_create_commit(session: Session, repo_name: str, sha: str) -> Commit:
    """The commit row (and its repository and empty report), created if missing."""
    repo = session.scalar(sa.select(Repository).where(Repository.name == repo_name))
    if repo is None:
        repo = Repository(name=repo_name)
        session.add(repo)
        session.flush()
    commit = session.scalar(
        sa.select(Commit).where(Commit.repository_id == repo.id, Commit.sha == sha)
    )
    if commit is None:
        commit = Commit(repository_id=repo.id, sha=sha)
        session.add(commit)
        session.flush()
        session.add(CommitReport(commit_id=commit.id))
        session.flush()
    return commit


def find_commit(session: Session, repo_name: str, sha: str) -> Commit | None:
    return session.scalar(
        sa.select(Commit)
        .join(Repository)
        .where(Repository.name == repo_name, Commit.sha == sha.lower())
    )


def accept_uploads(
    services: Services,
    repo_name: str,
    sha: str,
    reports: list[tuple[str, bytes]],
    flags: list[str] | None = None,
) -> Accepted:
    """Store ``reports`` (filename, raw bytes) as uploads of the commit.

    The rows are committed before the ids enter the Redis processing set, so
    a crash in between leaves uploads in state ``uploaded`` for the sweep,
    never ids in Redis without a row behind them.
    """
    repo_name, sha = validate_repo(repo_name), validate_sha(sha)
    flags = validate_flags(list(flags or []))
    limit = services.settings.max_upload_bytes
    for filename, raw in reports:
        if len(raw) > limit:
            raise InvalidUpload(f"{filename}: {len(raw)} bytes is over the limit of {limit}")
    with services.sessions.begin() as session:
        commit = _commit_for_upload(session, repo_name, sha)
        rows = [
            Upload(
                commit_id=commit.id,
                state=UploadState.UPLOADED,
                flags=flags,
                filename=filename[-1024:],
                raw=raw,
                raw_size=len(raw),
            )
            for filename, raw in reports
        ]
        session.add_all(rows)
        session.flush()
        accepted = Accepted(commit.repository_id, commit.id, [row.id for row in rows])
    services.state.mark_processing(accepted.repoid, accepted.commitid, accepted.upload_ids)
    return accepted


def _commit_for_upload(session: Session, repo_name: str, sha: str) -> Commit:
    # Two CLIs creating the same repository or commit at once: one insert
    # loses on the unique constraint; retry the lookup in a savepoint.
    for _ in range(3):
        try:
            with session.begin_nested():
                return get_or_create_commit(session, repo_name, sha)
        except sa.exc.IntegrityError:
            continue
    return get_or_create_commit(session, repo_name, sha)
