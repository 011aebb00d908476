"""Commits and uploads created over HTTP, and the payloads PUT to them.

An upload is created (state ``awaiting``) by the POST that hands out its
PUT URL, and enters the pipeline only when its payload arrives. A POST
retried by the client after a lost reply creates another ``awaiting`` row,
but the client PUTs to one URL only, so one upload is stored and merged;
the other stays ``awaiting``, outside the pipeline and the counts.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import IO, TYPE_CHECKING

import anyio.to_thread
import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.db.engine import binary_scalars
from app.db.models import (
    Commit,
    CommitReport,
    Repository,
    Upload,
    UploadChunk,
    UploadState,
    utcnow,
)
from app.runtime.services import Services

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine


@dataclass
class CommitMeta:
    branch: str | None = None
    parent_commit_id: str | None = None
    pullid: int | None = None


@dataclass
class UploadMeta:
    flags: list[str] = field(default_factory=list)
    name: str | None = None
    job_code: str | None = None
    build_code: str | None = None
    build_url: str | None = None
    ci_service: str | None = None
    env: dict[str, str | None] | None = None
    filename: str = ""


def upsert_commit(session: Session, repo: Repository, sha: str, meta: CommitMeta) -> Commit:
    """The commit (created if missing); only its empty fields are filled, as
    Codecov does. Creation runs in a savepoint: a concurrent creator's win
    on the unique key is read back instead."""
    find = sa.select(Commit).where(Commit.repository_id == repo.id, Commit.sha == sha)
    commit = session.scalar(find)
    if commit is None:
        try:
            with session.begin_nested():
                commit = Commit(repository_id=repo.id, sha=sha)
                session.add(commit)
                session.flush()
                session.add(CommitReport(commit_id=commit.id))
                session.flush()
        except sa.exc.IntegrityError:
            commit = session.scalars(find).one()
    for name, value in _commit_fields(meta).items():
        if getattr(commit, name) is None:
            setattr(commit, name, value)
    return commit


def _upload_values(meta: UploadMeta, payload_format: str) -> dict[str, object]:
    """An awaiting upload's columns from what the uploader sent (the commit's
    branch, pull request and parent are copied from the commit)."""
    return {
        "state": UploadState.AWAITING,
        "flags": meta.flags,
        "filename": meta.filename[-1024:] or f"{payload_format}-{uuid.uuid4().hex[:12]}",
        "raw": b"",
        "raw_size": 0,
        "payload_format": payload_format,
        "name": (meta.name or None) and meta.name[:100],
        "job_code": meta.job_code and meta.job_code[:255],
        "build_code": meta.build_code and meta.build_code[:255],
        "build_url": meta.build_url and meta.build_url[:2048],
        "ci_service": meta.ci_service and meta.ci_service[:64],
        "env": meta.env,
    }


def create_awaiting_upload(
    session: Session, commit: Commit, meta: UploadMeta, payload_format: str
) -> Upload:
    upload = Upload(
        commit_id=commit.id,
        **_upload_values(meta, payload_format),
        branch=commit.branch,
        pullid=commit.pullid,
        parent_commit_id=commit.parent_commit_id,
    )
    session.add(upload)
    session.flush()
    return upload


@contextmanager
def single_statement(services: Services) -> Iterator[sa.Connection]:
    """A connection for one statement that needs no transaction around it
    (it is atomic alone): on PostgreSQL no BEGIN/COMMIT round trips."""
    if services.engine.dialect.name == "postgresql":
        with services.engine.connect() as conn:
            yield conn.execution_options(isolation_level="AUTOCOMMIT")
    else:  # SQLite: its writers are serialised by BEGIN IMMEDIATE (app/db/engine.py)
        with services.engine.begin() as conn:
            yield conn


@functools.cache
def _insert_from_commit(
    names: tuple[str, ...], has_branch: bool, has_parent: bool, has_pullid: bool
) -> sa.Insert:
    """INSERT INTO uploads ... SELECT from the commit row (bound ``repoid``,
    ``sha`` and ``v_<column>``), where the commit has every field the request
    would fill. Built once per shape: building it costs more than running it."""
    columns = Upload.__table__.c
    filled = [
        col.is_not(None)
        for col, given in (
            (Commit.branch, has_branch),
            (Commit.parent_commit_id, has_parent),
            (Commit.pullid, has_pullid),
        )
        if given
    ]
    from_commit = sa.select(
        Commit.id,
        Commit.branch,
        Commit.pullid,
        Commit.parent_commit_id,
        *(sa.bindparam(f"v_{name}", type_=columns[name].type) for name in names),
    ).where(
        Commit.repository_id == sa.bindparam("repoid"), Commit.sha == sa.bindparam("sha"), *filled
    )
    return (
        sa.insert(Upload)
        .from_select(["commit_id", "branch", "pullid", "parent_commit_id", *names], from_commit)
        .returning(Upload.id)
    )


def _insert_awaiting(
    repo: Repository, sha: str, commit_meta: CommitMeta, meta: UploadMeta, payload_format: str
) -> tuple[sa.Insert, dict[str, object]]:
    """The INSERT ... SELECT of an awaiting upload of an existing commit, and its parameters."""
    values = {**_upload_values(meta, payload_format), "created_at": utcnow()}
    values["updated_at"] = values["created_at"]
    insert = _insert_from_commit(
        tuple(values),
        bool(commit_meta.branch),
        commit_meta.parent_commit_id is not None,
        commit_meta.pullid is not None,
    )
    params = {f"v_{name}": value for name, value in values.items()}
    return insert, {"repoid": repo.id, "sha": sha, **params}


def add_awaiting_upload(
    services: Services,
    repo: Repository,
    sha: str,
    commit_meta: CommitMeta,
    meta: UploadMeta,
    payload_format: str,
) -> int:
    """Create an awaiting upload of commit ``sha``; its id.

    The usual case (the commit exists, and has what ``commit_meta`` would
    fill) is one INSERT ... SELECT from the commit row. Otherwise the commit
    is created or filled first (``upsert_commit``), in one transaction."""
    insert, params = _insert_awaiting(repo, sha, commit_meta, meta, payload_format)
    with single_statement(services) as conn:
        upload_id = conn.scalar(insert, params)
    if upload_id is not None:
        return int(upload_id)
    with services.sessions.begin() as session:
        commit = upsert_commit(session, repo, sha, commit_meta)
        return create_awaiting_upload(session, commit, meta, payload_format).id


async def add_awaiting_upload_async(
    services: Services,
    engine: AsyncEngine | None,
    repo: Repository,
    sha: str,
    commit_meta: CommitMeta,
    meta: UploadMeta,
    payload_format: str,
) -> int:
    """``add_awaiting_upload`` for an event loop: on ``engine`` (PostgreSQL,
    autocommit) in single statements without leaving the loop; with no
    ``engine`` (SQLite) in the thread pool.

    The usual case is one statement. The CI jobs of a new commit arrive
    together: each tries to create it (with its report row, in one
    statement: ``INSERT ... ON CONFLICT DO NOTHING``), waits only for the
    creator's statement, then adds its upload as in the usual case. A commit
    lacking a field the request brings has it filled first."""
    args = (repo, sha, commit_meta, meta, payload_format)
    if engine is None:
        return await anyio.to_thread.run_sync(add_awaiting_upload, services, *args)
    insert, params = _insert_awaiting(*args)
    async with engine.connect() as conn:  # an autocommit engine (make_async_engine)
        upload_id = await conn.scalar(insert, params)
        if upload_id is None:
            await conn.execute(_create_commit(repo, sha, commit_meta))
            upload_id = await conn.scalar(insert, params)
        if upload_id is None and _commit_fields(commit_meta):  # the commit lacks one
            await conn.execute(_fill_commit(repo, sha, commit_meta))
            insert, params = _insert_awaiting(repo, sha, CommitMeta(), meta, payload_format)
            upload_id = await conn.scalar(insert, params)
    if upload_id is None:  # pragma: no cover - commits are never deleted
        raise RuntimeError(f"commit {sha} of {repo.name} vanished while adding an upload")
    return int(upload_id)


def _commit_fields(meta: CommitMeta) -> dict[str, object]:
    given = {
        "branch": meta.branch and meta.branch[:255],
        "parent_commit_id": meta.parent_commit_id,
        "pullid": meta.pullid,
    }
    return {name: value for name, value in given.items() if value is not None and value != ""}


def _create_commit(repo: Repository, sha: str, meta: CommitMeta) -> sa.Insert:
    """One statement (PostgreSQL): the commit and its report row, unless the
    commit exists (then nothing, once a concurrent creator has committed)."""
    from sqlalchemy.dialects.postgresql import insert as pg_insert

    now = utcnow()
    created = (
        pg_insert(Commit)
        .values(repository_id=repo.id, sha=sha, created_at=now, **_commit_fields(meta))
        .on_conflict_do_nothing(index_elements=["repository_id", "sha"])
        .returning(Commit.id)
        .cte("created")
    )
    columns = CommitReport.__table__.c
    report = sa.select(
        created.c.id,
        sa.literal(0, type_=columns.version.type),
        sa.literal({}, type_=columns.totals.type),
        sa.literal(now, type_=columns.updated_at.type),
    )
    return sa.insert(CommitReport).from_select(
        ["commit_id", "version", "totals", "updated_at"], report
    )


def _fill_commit(repo: Repository, sha: str, meta: CommitMeta) -> sa.Update:
    """Fill only what the commit lacks, as Codecov does (one statement)."""
    given = _commit_fields(meta)
    columns = Commit.__table__.c
    return (
        sa.update(Commit)
        .where(
            Commit.repository_id == repo.id,
            Commit.sha == sha,
            sa.or_(*(columns[name].is_(None) for name in given)),
        )
        .values({name: sa.func.coalesce(columns[name], value) for name, value in given.items()})
    )


def awaiting(services: Services, upload_id: int) -> bool:
    """True if the upload exists and still waits for its payload."""
    with services.engine.connect() as conn:
        state = conn.scalar(sa.select(Upload.state).where(Upload.id == upload_id))
    return state == UploadState.AWAITING


@dataclass(frozen=True, slots=True)
class PayloadTarget:
    """What a PUT needs to know of its upload before reading the body: whether
    it still awaits one, whose it is (limits per repository), where its
    object goes (app.storage.object_key)."""

    awaiting: bool
    repoid: int
    repo_name: str
    sha: str
    created_at: datetime


def payload_target(services: Services, upload_id: int) -> PayloadTarget | None:
    """The upload's ``PayloadTarget``; None if there is no such upload."""
    with services.engine.connect() as conn:
        row = conn.execute(
            sa.select(Upload.state, Commit.repository_id, Repository.name, Commit.sha)
            .add_columns(Upload.created_at)
            .join(Commit, Commit.id == Upload.commit_id)
            .join(Repository, Repository.id == Commit.repository_id)
            .where(Upload.id == upload_id)
        ).first()
    if row is None:
        return None
    return PayloadTarget(row[0] == UploadState.AWAITING, row[1], row[2], row[3], row[4])


@functools.cache
def _fence() -> sa.Update:
    """The single-use fence: the upload (bound ``upload_id``) leaves
    ``awaiting`` with its payload (``raw``, ``raw_size``), returning its
    ``(repoid, commitid)``; no row if it was not awaiting."""
    repoid = sa.select(Commit.repository_id).where(Commit.id == Upload.commit_id)
    return (
        sa.update(Upload)
        .where(Upload.id == sa.bindparam("upload_id"), Upload.state == UploadState.AWAITING)
        .values(
            state=UploadState.UPLOADED,
            raw=sa.bindparam("raw", type_=Upload.__table__.c.raw.type),
            raw_size=sa.bindparam("raw_size"),
            storage_path=sa.bindparam("storage_path", type_=Upload.__table__.c.storage_path.type),
            updated_at=sa.bindparam("now", type_=Upload.__table__.c.updated_at.type),
        )
        .returning(repoid.scalar_subquery(), Upload.commit_id)
    )


def _fence_params(
    upload_id: int, raw: bytes | bytearray, size: int, storage_path: str | None = None
) -> dict[str, object]:
    return {
        "upload_id": upload_id,
        "raw": raw,
        "raw_size": size,
        "storage_path": storage_path,
        "now": utcnow(),
    }


def store_payload(
    services: Services,
    upload_id: int,
    body: bytes | bytearray,
    *,
    storage_path: str | None = None,
    size: int | None = None,
) -> tuple[int, int] | None:
    """Store the payload of an awaiting upload; ``(repoid, commitid)``, or
    None if the upload no longer awaits one (the URL was used already). The
    state change is the single-use fence: one statement that stores, moves
    and names the commit. With ``storage_path`` the payload (``size`` bytes)
    is already in the object store under that key, and ``body`` is empty.
    Redis and the broker are not told: ``app.ingest.admit.admit`` does that,
    the one caller that lets an upload into the pipeline."""
    params = _fence_params(upload_id, body, len(body) if size is None else size, storage_path)
    with single_statement(services) as conn:
        row = conn.execute(_fence(), params).first()
    if row is None:
        return None
    return row[0], row[1]


def store_chunked(
    services: Services, upload_id: int, source: IO[bytes], chunk_bytes: int
) -> tuple[int, int] | None:
    """``store_payload`` for a large payload already received in full (a
    spooled file): chunk rows of ``chunk_bytes`` and the fence in one
    transaction, which never waits for a client."""
    writer = PayloadWriter(services, upload_id)
    try:
        while chunk := source.read(chunk_bytes):
            writer.write(chunk)
    except sa.exc.IntegrityError:  # a concurrent PUT of the same URL wrote its chunks first
        writer.abort()
        return None
    except BaseException:
        writer.abort()
        raise
    try:
        return writer.finish()
    except sa.exc.IntegrityError:
        return None


class PayloadWriter:
    """Stores a large payload chunk by chunk (``upload_chunks``) in one
    transaction, so neither the api nor the database driver holds it whole;
    ``finish`` moves the upload out of ``awaiting`` (the single-use fence).
    Fed from a complete body (``store_chunked``): a transaction held open
    while a client sends would let stalled clients take every connection."""

    def __init__(self, services: Services, upload_id: int) -> None:
        self.upload_id = upload_id
        self.session = services.sessions()
        self.session.begin()
        self.seq = self.size = 0

    def write(self, data: bytes) -> None:
        self.session.execute(
            sa.insert(UploadChunk).values(upload_id=self.upload_id, seq=self.seq, data=data)
        )
        self.seq += 1
        self.size += len(data)

    def finish(self) -> tuple[int, int] | None:
        """``(repoid, commitid)``, or None (nothing kept) if the URL was used meanwhile."""
        try:
            params = _fence_params(self.upload_id, b"", self.size)
            row = self.session.execute(_fence(), params).first()
            if row is None:
                self.session.rollback()
                return None
            self.session.commit()
        finally:
            self.session.close()
        return row[0], row[1]

    def abort(self) -> None:
        self.session.rollback()
        self.session.close()


def read_chunks(session: Session, upload_id: int) -> bytes:
    """A chunked payload, joined (the processor's view of ``Upload.raw``)."""
    return b"".join(
        binary_scalars(
            session,
            sa.select(UploadChunk.data)
            .where(UploadChunk.upload_id == upload_id)
            .order_by(UploadChunk.seq),
        )
    )


def upload_counts(services: Services, commit_id: int) -> dict[str, int]:
    """Codecov's upload-complete counts; ``awaiting`` uploads (no payload) are not counted."""
    with services.sessions() as session:
        by_state = dict(
            session.execute(
                sa.select(Upload.state, sa.func.count())
                .where(Upload.commit_id == commit_id, Upload.state != UploadState.AWAITING)
                .group_by(Upload.state)
            ).all()
        )
    error = by_state.get(UploadState.ERROR, 0)
    success = by_state.get(UploadState.MERGED, 0)
    total = sum(by_state.values())
    return {
        "uploads_total": total,
        "uploads_success": success,
        "uploads_processing": total - success - error,
        "uploads_error": error,
    }
