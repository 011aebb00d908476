"""Uploads handed over directly (``covworker upload``, the demo, the
benchmarks): validate, store the raw bytes (in Postgres, or with
``COVWORKER_STORAGE=s3`` in the object store), then let them into
processing as every upload enters it (``app.ingest.admit.enter_processing``).

The HTTP routes take the other way in (``app.ingest.store``: a slot, then
the PUT); both create commits with :func:`app.ingest.store.upsert_commit`."""

from __future__ import annotations

import io
import logging
import re
import secrets
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.db.models import Commit, Repository, Upload, UploadState, utcnow
from app.errors import InvalidUpload
from app.ingest.admit import SendProcessor, enter_processing
from app.ingest.store import CommitMeta, upsert_commit
from app.runtime.services import Services
from app.storage import PayloadStore, StorageUnavailable, object_key

logger = logging.getLogger(__name__)

#: OWNER/NAME, or GROUP/SUBGROUP/.../NAME as GitLab nests them.
REPO_NAME = re.compile(r"^[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+){1,8}$")
COMMIT_SHA = re.compile(r"^[0-9a-f]{7,64}$")
#: A stored commit is named in full: SHA-1 (40 hex digits) or SHA-256 (64).
FULL_SHA = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
FLAG = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


def validate_repo(name: str) -> str:
    """The repository's canonical name: lower case, as GitHub compares names."""
    if not REPO_NAME.match(name) or len(name) > 255:
        raise InvalidUpload(f"repository {name!r} is not of the form OWNER/NAME")
    return name.lower()


def validate_sha(sha: str) -> str:
    lowered = sha.lower()
    if not COMMIT_SHA.match(lowered):
        raise InvalidUpload(f"commit {sha!r} is not a hex SHA (7 to 64 hex digits)")
    return lowered


def validate_full_sha(sha: str) -> str:
    """A SHA to store: the full 40 (SHA-1) or 64 (SHA-256) hex digits."""
    lowered = sha.lower()
    if not FULL_SHA.match(lowered):
        raise InvalidUpload(
            f"commit {sha!r} is not a full SHA: give all 40 hex digits (or 64 for SHA-256)"
        )
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
    repo = session.scalar(
        sa.select(Repository).where(sa.func.lower(Repository.name) == repo_name.lower())
    )
    if repo is None:
        repo = Repository(name=repo_name)
        session.add(repo)
        session.flush()
    return upsert_commit(session, repo, sha, CommitMeta())


def find_commit(session: Session, repo_name: str, sha: str) -> Commit | None:
    return session.scalar(
        sa.select(Commit)
        .join(Repository)
        .where(sa.func.lower(Repository.name) == repo_name.lower(), Commit.sha == sha.lower())
    )


def accept_uploads(
    services: Services,
    repo_name: str,
    sha: str,
    reports: list[tuple[str, bytes]],
    flags: list[str] | None = None,
    *,
    send_processor: SendProcessor | None = None,
) -> Accepted:
    """Store ``reports`` (filename, raw bytes) as uploads of the commit, and
    let them into processing; with ``send_processor`` each processor is sent
    (the CLI, the demo), without it the caller drives the pipeline itself.

    The rows are created ``uploaded``, past the fence an HTTP upload passes
    (nothing else knows them yet), and committed before the ids enter the
    Redis processing set, so a crash in between leaves uploads in state
    ``uploaded`` for the sweep, never ids in Redis without a row behind them.
    With an object store the payloads go there (``_accept_into_store``), as
    an HTTP PUT's do.
    """
    repo_name, sha = validate_repo(repo_name), validate_full_sha(sha)
    flags = validate_flags(list(flags or []))
    limit = services.settings.max_upload_bytes
    for filename, raw in reports:
        if len(raw) > limit:
            raise InvalidUpload(f"{filename}: {len(raw)} bytes is over the limit of {limit}")
    if services.payload_store is not None:
        accepted = _accept_into_store(
            services, services.payload_store, repo_name, sha, reports, flags
        )
    else:
        with services.sessions.begin() as session:
            commit, rows = _add_uploads(session, repo_name, sha, reports, flags, in_row=True)
            accepted = Accepted(commit.repository_id, commit.id, [row.id for row in rows])
    enter_processing(
        services, accepted.repoid, accepted.commitid, accepted.upload_ids, send_processor
    )
    return accepted


def _add_uploads(
    session: Session,
    repo_name: str,
    sha: str,
    reports: list[tuple[str, bytes]],
    flags: list[str],
    *,
    in_row: bool,
) -> tuple[Commit, list[Upload]]:
    """The commit's new upload rows, flushed for their ids: ``uploaded`` with
    their payloads in the row (``in_row``), or ``awaiting`` them (stored apart)."""
    commit = _commit_for_upload(session, repo_name, sha)
    rows = [
        Upload(
            commit_id=commit.id,
            state=UploadState.UPLOADED if in_row else UploadState.AWAITING,
            flags=flags,
            filename=filename[-1024:],
            raw=raw if in_row else b"",
            raw_size=len(raw) if in_row else 0,
        )
        for filename, raw in reports
    ]
    session.add_all(rows)
    session.flush()
    return commit, rows


def _accept_into_store(
    services: Services,
    store: PayloadStore,
    repo_name: str,
    sha: str,
    reports: list[tuple[str, bytes]],
    flags: list[str],
) -> Accepted:
    """``accept_uploads``' rows with the payloads in the object store, all or none.

    The rows are made first, ``awaiting`` (their ids name the objects, as the
    api's create-upload does); then each payload is stored as its object;
    then one transaction moves them all to ``uploaded`` with their keys: an
    upload is never ``uploaded`` without its object. A store that fails
    meanwhile: the objects already stored and the rows are deleted, and
    ``StorageUnavailable`` says nothing was stored."""
    with services.sessions.begin() as session:
        commit, rows = _add_uploads(session, repo_name, sha, reports, flags, in_row=False)
        stored_name = session.scalar(
            sa.select(Repository.name).where(Repository.id == commit.repository_id)
        )
        accepted = Accepted(commit.repository_id, commit.id, [row.id for row in rows])
    today = utcnow().date()
    # named as a PUT through covworker names its object ({upload}.{attempt}.txt),
    # never as a presigned one ({upload}.txt), which the sweep looks for
    keys = [
        object_key(
            accepted.repoid,
            stored_name or repo_name,
            sha,
            upload_id,
            today,
            secrets.token_hex(4),
            secret=services.settings.object_key_secret,
        )
        for upload_id in accepted.upload_ids
    ]
    written: list[str] = []
    try:
        for key, (_, raw) in zip(keys, reports, strict=True):
            store.put(key, io.BytesIO(raw), len(raw))
            written.append(key)
    except BaseException as exc:
        _withdraw(services, store, accepted.upload_ids, written)
        if isinstance(exc, StorageUnavailable):
            raise StorageUnavailable(f"{exc}; nothing was stored, upload again later") from exc
        raise
    with services.sessions.begin() as session:
        now = utcnow()
        for upload_id, key, (_, raw) in zip(accepted.upload_ids, keys, reports, strict=True):
            session.execute(
                sa.update(Upload)
                .where(Upload.id == upload_id, Upload.state == UploadState.AWAITING)
                .values(state=UploadState.UPLOADED, storage_path=key, raw_size=len(raw))
                .values(updated_at=now)
            )
    return accepted


def _withdraw(
    services: Services, store: PayloadStore, upload_ids: list[int], keys: list[str]
) -> None:
    """Undo a half-stored ``_accept_into_store``: its objects, then its rows."""
    try:
        store.delete(keys)
    except StorageUnavailable as exc:  # the store is down: they cannot be reached either
        logger.warning("Could not delete the objects %s of a failed upload: %s", keys, exc)
    with services.sessions.begin() as session:
        session.execute(
            sa.delete(Upload).where(Upload.id.in_(upload_ids), Upload.state == UploadState.AWAITING)
        )


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
