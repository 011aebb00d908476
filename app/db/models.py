"""The tables. The schema itself comes from the Alembic migrations.

Postgres is the source of truth: the raw bytes of every upload live here,
so Redis can lose everything and the sweep still re-drives each upload.
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Mapping
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, relationship


def utcnow() -> datetime:
    return datetime.now(UTC)


def as_utc(moment: datetime) -> datetime:
    """``moment`` in UTC: SQLite hands datetimes back without their zone, and
    covworker stores them in UTC."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


class Base(DeclarativeBase):
    pass


class UploadState(enum.StrEnum):
    UPLOADED = "uploaded"  # raw bytes stored, processor not started
    PROCESSING = "processing"  # a processor is parsing it
    PROCESSED = "processed"  # intermediate report in Redis, waiting for a merge
    MERGED = "merged"  # its coverage is in the commit report (final)
    ERROR = "error"  # it cannot be parsed; ``error`` says why (final)
    #: Created over HTTP, its payload not PUT yet. Outside the pipeline: the
    #: sweep and the notifier ignore it; the PUT moves it to ``uploaded``.
    AWAITING = "awaiting"


#: States an upload can still leave; the sweep looks for uploads stuck in them.
PENDING_STATES = (UploadState.UPLOADED, UploadState.PROCESSING, UploadState.PROCESSED)
FINAL_STATES = (UploadState.MERGED, UploadState.ERROR)

TZDateTime = sa.DateTime(timezone=True)


class Repository(Base):
    __tablename__ = "repositories"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(sa.String(255), unique=True)  # OWNER/NAME
    webhook_url: Mapped[str | None] = mapped_column(sa.String(2048), default=None)
    #: Key of the HMAC-SHA256 signature of its webhook bodies (``X-Covworker-Signature``).
    webhook_secret: Mapped[str | None] = mapped_column(sa.String(128), default=None)
    created_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow)
    #: Git host the uploaders name (``github``, ``gitlab``, ...).
    service: Mapped[str] = mapped_column(sa.String(32), default="github")
    #: sha256 (hex) of the repository's upload token; the token itself is never stored.
    upload_token_hash: Mapped[str | None] = mapped_column(sa.String(64), default=None, unique=True)
    #: Pages of a private repository need its read token (``app/web/access.py``).
    private: Mapped[bool] = mapped_column(default=False, server_default=sa.false())
    #: SHA-256 of the read token, hex; the token itself is shown once.
    read_token_hash: Mapped[str | None] = mapped_column(sa.String(128), default=None)
    #: Whether GitHub or GitLab says it is private, as last read from it
    #: (``app/providers/privacy.py``); None until read. True: its pages are
    #: a private repository's; None: they show no source.
    provider_private: Mapped[bool | None] = mapped_column(default=None)
    #: The branch the repositories page follows (None: the latest commit of any branch).
    default_branch: Mapped[str | None] = mapped_column(sa.String(255), default=None)
    #: Who named it: ``set`` (``covworker repo set --default-branch``, kept) or
    #: ``provider`` (learned from GitHub or GitLab, ``app/feedback/default_branch.py``).
    default_branch_source: Mapped[str | None] = mapped_column(sa.String(16), default=None)
    #: The repository's ``codecov.yml`` as stored by ``covworker repo set --yaml``
    #: (used when the provider has none at the head commit).
    codecov_yaml: Mapped[str | None] = mapped_column(sa.Text, default=None)
    #: The ``codecov.yml`` last read from the provider at a head commit (None:
    #: none found): the precision and rounding every surface shows figures
    #: with (``app.figures.display_config``). Carryforward reads each head's
    #: own file instead (``app.merge.carryforward``).
    fetched_codecov_yaml: Mapped[str | None] = mapped_column(sa.Text, default=None)


class Commit(Base):
    __tablename__ = "commits"
    __table_args__ = (
        sa.UniqueConstraint("repository_id", "sha"),
        # A branch's commits newest first: the coverage chart, the badge, the trend.
        sa.Index("ix_commits_repository_branch_created", "repository_id", "branch", "created_at"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    repository_id: Mapped[int] = mapped_column(sa.ForeignKey("repositories.id"))
    sha: Mapped[str] = mapped_column(sa.String(64))
    created_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow)
    branch: Mapped[str | None] = mapped_column(sa.String(255), default=None)
    parent_commit_id: Mapped[str | None] = mapped_column(sa.String(64), default=None)
    pullid: Mapped[int | None] = mapped_column(default=None)

    repository: Mapped[Repository] = relationship()


class Upload(Base):
    __tablename__ = "uploads"
    __table_args__ = (
        sa.Index("ix_uploads_state_updated", "state", "updated_at"),
        sa.Index("ix_uploads_commit_id_state", "commit_id", "state"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    commit_id: Mapped[int] = mapped_column(sa.ForeignKey("commits.id"), index=True)
    state: Mapped[str] = mapped_column(sa.String(16), default=UploadState.UPLOADED)
    flags: Mapped[list[str]] = mapped_column(sa.JSON, default=list)
    filename: Mapped[str] = mapped_column(sa.String(1024), default="")
    report_format: Mapped[str | None] = mapped_column(sa.String(32), default=None)
    error: Mapped[str | None] = mapped_column(sa.Text, default=None)
    raw: Mapped[bytes] = mapped_column(sa.LargeBinary, deferred=True)
    raw_size: Mapped[int] = mapped_column(default=0)
    #: Object key of the payload in the object store (``COVWORKER_STORAGE=s3``,
    #: app/storage); None: the payload is in ``raw`` or ``upload_chunks``.
    storage_path: Mapped[str | None] = mapped_column(sa.String(1024), default=None)
    #: When retention dropped ``raw`` (merged uploads only); it cannot be re-processed.
    raw_dropped_at: Mapped[datetime | None] = mapped_column(TZDateTime, default=None)
    #: Times a merge found its intermediate missing or unreadable and sent it
    #: back through processing; past ``Settings.max_redrives`` it ends ``error``.
    redrives: Mapped[int] = mapped_column(default=0, server_default="0")
    #: Commit-report version whose merge added this upload (the I2 fence).
    merged_version: Mapped[int | None] = mapped_column(default=None)
    created_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow)
    processed_at: Mapped[datetime | None] = mapped_column(TZDateTime, default=None)
    merged_at: Mapped[datetime | None] = mapped_column(TZDateTime, default=None)
    # -- what the uploaders send, as Codecov stores it per upload ----------
    #: ``v1`` (codecov-cli JSON) or ``legacy`` (text) payload; None: one plain report.
    payload_format: Mapped[str | None] = mapped_column(sa.String(16), default=None)
    name: Mapped[str | None] = mapped_column(sa.String(100), default=None)
    job_code: Mapped[str | None] = mapped_column(sa.String(255), default=None)
    build_code: Mapped[str | None] = mapped_column(sa.String(255), default=None)
    build_url: Mapped[str | None] = mapped_column(sa.String(2048), default=None)
    ci_service: Mapped[str | None] = mapped_column(sa.String(64), default=None)
    env: Mapped[dict[str, str | None] | None] = mapped_column(
        sa.JSON(none_as_null=True), default=None
    )
    branch: Mapped[str | None] = mapped_column(sa.String(255), default=None)
    pullid: Mapped[int | None] = mapped_column(default=None)
    parent_commit_id: Mapped[str | None] = mapped_column(sa.String(64), default=None)
    #: Report paths the network file list could not resolve (kept as they were).
    warnings: Mapped[list[str] | None] = mapped_column(sa.JSON(none_as_null=True), default=None)
    #: The bad records its parsers skipped: count and the first few
    #: (``app.coverage.skipped.SkippedRecords.to_json``); None: none.
    skipped_records: Mapped[dict[str, Any] | None] = mapped_column(
        sa.JSON(none_as_null=True), default=None
    )


class UploadChunk(Base):
    """A large payload received over HTTP, in order, one row per chunk.

    Stored as it streams in, so the api never holds a whole 100 MB body (and
    the database driver never a second copy of it); ``Upload.raw`` is empty
    then, and the processor joins the chunks.
    """

    __tablename__ = "upload_chunks"

    upload_id: Mapped[int] = mapped_column(sa.ForeignKey("uploads.id"), primary_key=True)
    seq: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    data: Mapped[bytes] = mapped_column(sa.LargeBinary)


class Instance(Base):
    """One row: the id of this database, created with the schema.

    Redis keys of the processing state carry it, so state Redis kept for a
    database that was recreated or restored is never read as live state.
    """

    __tablename__ = "instance"

    id: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    created_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow)
    #: The token of the epoch marker last set in Redis (``ProcessingState.claim_epoch``);
    #: None until the first one. A marker missing after one was set means Redis lost its data.
    redis_epoch: Mapped[str | None] = mapped_column(sa.String(32), default=None)


class CommitReport(Base):
    """The merged coverage of a commit. One row per commit, versioned."""

    __tablename__ = "commit_reports"

    id: Mapped[int] = mapped_column(primary_key=True)
    commit_id: Mapped[int] = mapped_column(sa.ForeignKey("commits.id"), unique=True)
    #: Bumped by every merge transaction; notifications are per version.
    version: Mapped[int] = mapped_column(default=0)
    #: ``codec.dump(Report)`` of the merged coverage (None before the first merge).
    report: Mapped[bytes | None] = mapped_column(sa.LargeBinary, default=None, deferred=True)
    totals: Mapped[dict[str, float]] = mapped_column(sa.JSON, default=dict)
    updated_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow)
    #: The merge of the commit's own uploads, kept only while some flag is
    #: carried forward into ``report`` (``app.pullrequests.carryforward``).
    uploaded_report: Mapped[bytes | None] = mapped_column(
        sa.LargeBinary, default=None, deferred=True
    )
    #: Per-file totals of ``report`` (``app.merge.report_summary``), stored by the
    #: merge that settles the commit so the pages need not decode the report;
    #: None: merged before, or by a pass that left uploads in flight
    #: (``app.merge.file_lines.store_pages``).
    file_totals: Mapped[bytes | None] = mapped_column(sa.LargeBinary, default=None, deferred=True)
    #: The comparison with the base found at merge time, with that base's id
    #: and version (``app.merge.report_summary.summarise``); None: merged before.
    comparison: Mapped[dict[str, Any] | None] = mapped_column(
        sa.JSON(none_as_null=True), default=None, deferred=True
    )
    #: The version whose lines are stored in windows in ``report_file_lines``
    #: (``app.merge.file_lines``); None or older: the file page decodes the report.
    lines_version: Mapped[int | None] = mapped_column(default=None)


class ReportFileLines(Base):
    """One window of a file's instrumented lines in a commit's merged report.

    The merge pass stores every file of the version it writes in windows of
    ``app.merge.file_lines.WINDOW_LINES`` lines (and deletes the older versions'),
    so the file page reads the few rows around the line asked for instead of
    decoding the report. The file's totals are repeated in each row, so one
    read answers the page.
    """

    __tablename__ = "report_file_lines"

    commit_id: Mapped[int] = mapped_column(sa.ForeignKey("commits.id"), primary_key=True)
    version: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    #: ``app.merge.file_lines.path_key``: a digest of the path, not the path, so
    #: the key stays small however long a path is (a B-tree entry holds at
    #: most 2,704 bytes) and any path is stored (PostgreSQL text takes no NUL).
    path_key: Mapped[bytes] = mapped_column(sa.LargeBinary(16), primary_key=True)
    #: The window's first line number (0 for a file without lines).
    first_line: Mapped[int] = mapped_column(sa.BigInteger, primary_key=True, autoincrement=False)
    #: Where the window starts among the file's instrumented lines (0-based).
    first_index: Mapped[int] = mapped_column(sa.BigInteger)
    #: ``app.merge.file_lines.encode_window``: line numbers, hits, branch lines.
    data: Mapped[bytes] = mapped_column(sa.LargeBinary)
    #: The whole file's totals (instrumented lines, hits, misses, partials,
    #: branch lines; rows stored before migration 0017 hold 0 branch lines).
    file_lines: Mapped[int] = mapped_column(sa.BigInteger)
    file_hits: Mapped[int] = mapped_column(sa.BigInteger)
    file_misses: Mapped[int] = mapped_column(sa.BigInteger)
    file_partials: Mapped[int] = mapped_column(sa.BigInteger)
    file_branches: Mapped[int] = mapped_column(sa.BigInteger, server_default="0", default=0)


class CommitFlagReport(Base):
    """The merged coverage of a commit's uploads that carry one flag."""

    __tablename__ = "commit_flag_reports"
    __table_args__ = (sa.UniqueConstraint("commit_id", "flag"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    commit_id: Mapped[int] = mapped_column(sa.ForeignKey("commits.id"))
    flag: Mapped[str] = mapped_column(sa.String(64))
    #: ``codec.dump(Report)`` of the flag's merged coverage.
    report: Mapped[bytes | None] = mapped_column(sa.LargeBinary, default=None, deferred=True)
    totals: Mapped[dict[str, float]] = mapped_column(sa.JSON, default=dict)
    uploads: Mapped[int] = mapped_column(default=0)
    updated_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow)
    #: The ancestor sha this flag's coverage was carried forward from; None: uploaded.
    carried_from: Mapped[str | None] = mapped_column(sa.String(64), default=None)


class ReportUpload(Base):
    """An upload a report version added: one row per upload per merge pass.

    Appended by the merge transaction (its batch only, never the commit's
    whole list). No unique key on the upload: the fence is the upload's state
    (I2), and a double merge would show here as two rows.
    """

    __tablename__ = "report_uploads"

    id: Mapped[int] = mapped_column(primary_key=True)
    commit_id: Mapped[int] = mapped_column(sa.ForeignKey("commits.id"), index=True)
    report_version: Mapped[int]
    upload_id: Mapped[int] = mapped_column(sa.ForeignKey("uploads.id"))


def fail_uploads(session: Session, ids: Collection[int], error: str, at: datetime) -> None:
    """End uploads ``ids`` in ``error``, saying why: one UPDATE, in the caller's transaction."""
    session.execute(
        sa.update(Upload)
        .where(Upload.id.in_(ids))
        .values(state=UploadState.ERROR, error=error, updated_at=at)
    )


# -- the settled rule ---------------------------------------------------------
# A commit is settled when none of its uploads is in a ``PENDING_STATES``
# state (an ``awaiting`` upload, a presigned PUT not arrived, does not hold it
# back). This is the rule's one home: over counts (``is_settled``), in SQL
# (``upload_pending``) and in the caller's transaction (``uploads_in_flight``).


def is_settled(counts: Mapping[str, int]) -> bool:
    """Whether uploads counted by state (``{state: n}``, states missing count 0)
    leave the commit settled."""
    return not any(counts.get(s, 0) for s in PENDING_STATES)


def upload_pending(commit_id: Any) -> Any:
    """A where-clause: an upload of ``commit_id`` (a value or a column) is pending."""
    return sa.exists().where(Upload.commit_id == commit_id, Upload.state.in_(PENDING_STATES))


def uploads_in_flight(session: Session, commit_id: int) -> bool:
    """Whether the commit is not settled, in the caller's transaction (its own
    updates count)."""
    return bool(session.scalar(sa.select(upload_pending(commit_id))))


def merged_upload_ids(session: Session, commit_id: int) -> list[int]:
    """Upload ids merged into the commit's report, in merge order (an id twice if doubled)."""
    return list(
        session.scalars(
            sa.select(ReportUpload.upload_id)
            .where(ReportUpload.commit_id == commit_id)
            .order_by(ReportUpload.report_version, ReportUpload.id)
        )
    )


class Notification(Base):
    """One row per settled state of a commit (I6): its report version and how
    many of its uploads were merged and failed. The unique key is the fence."""

    __tablename__ = "notifications"
    __table_args__ = (
        sa.UniqueConstraint(
            "commit_id",
            "report_version",
            "uploads_merged",
            "uploads_errored",
            name="uq_notifications_settled_state",
        ),
        sa.Index("ix_notifications_webhook_next_at", "webhook_next_at"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    commit_id: Mapped[int] = mapped_column(sa.ForeignKey("commits.id"), index=True)
    report_version: Mapped[int]
    totals: Mapped[dict[str, float]] = mapped_column(sa.JSON, default=dict)
    uploads_merged: Mapped[int] = mapped_column(default=0)
    uploads_errored: Mapped[int] = mapped_column(default=0)
    webhook_url: Mapped[str | None] = mapped_column(sa.String(2048), default=None)
    webhook_delivered_at: Mapped[datetime | None] = mapped_column(TZDateTime, default=None)
    # The webhook's outbox (``app.notify.webhooks``): attempts so far, when
    # the next is due (None: at once), when it was given up, the last error.
    webhook_attempts: Mapped[int] = mapped_column(default=0, server_default="0")
    webhook_next_at: Mapped[datetime | None] = mapped_column(TZDateTime, default=None)
    webhook_failed_at: Mapped[datetime | None] = mapped_column(TZDateTime, default=None)
    webhook_error: Mapped[str | None] = mapped_column(sa.Text, default=None)
    created_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow)
    #: The change against the base commit (``app.queries.commit_delta``).
    comparison: Mapped[dict[str, Any] | None] = mapped_column(sa.JSON, default=None)
    #: Test-results totals of the settled commit (``app.testresults.summary``), if it has any.
    test_results: Mapped[dict[str, Any] | None] = mapped_column(sa.JSON, default=None)


# -- pull requests (app/db/bases.py) ---------------------------------------------


class Pull(Base):
    """A pull (merge) request as the provider last described it: its number,
    base and head. Written whenever covworker reads the pull request from the
    provider (feedback, an inbound provider event); read by the one base rule
    (:func:`app.db.bases.find_base`), so every surface compares a pull request's
    commit with the same base, and by feedback to know the pull's newest head."""

    __tablename__ = "pulls"
    __table_args__ = (sa.UniqueConstraint("repository_id", "number"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    repository_id: Mapped[int] = mapped_column(sa.ForeignKey("repositories.id"))
    number: Mapped[int]
    #: ``open``, ``closed`` or ``merged``.
    state: Mapped[str] = mapped_column(sa.String(16), default="open")
    title: Mapped[str] = mapped_column(sa.String(1024), default="")
    url: Mapped[str] = mapped_column(sa.String(2048), default="")
    base_branch: Mapped[str] = mapped_column(sa.String(255), default="")
    #: The commit the provider takes the pull request's diff against.
    base_sha: Mapped[str | None] = mapped_column(sa.String(64), default=None)
    head_branch: Mapped[str] = mapped_column(sa.String(255), default="")
    #: The pull request's newest head as the provider last said.
    head_sha: Mapped[str | None] = mapped_column(sa.String(64), default=None, index=True)
    created_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow)


# -- pull-request feedback (app/feedback/delivery.py) ------------------------


class PullDelivery(Base):
    """The pull-request outbox: one row per (commit, report version, target).

    ``target`` is ``prepare`` (find the pull request, compare, render: the
    row that writes the others), ``status:<context>`` or ``comment``. The
    payload is what to send; the row is retried on its own schedule like a
    webhook, and a newer version of the commit supersedes it.
    """

    __tablename__ = "pull_deliveries"
    __table_args__ = (
        sa.UniqueConstraint("commit_id", "report_version", "target"),
        sa.Index("ix_pull_deliveries_state_next_at", "state", "next_at"),
    )

    id: Mapped[int] = mapped_column(
        sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True
    )
    commit_id: Mapped[int] = mapped_column(sa.ForeignKey("commits.id"), index=True)
    report_version: Mapped[int]
    target: Mapped[str] = mapped_column(sa.String(255))
    payload: Mapped[dict[str, Any]] = mapped_column(sa.JSON, default=dict)
    #: pending | sent | superseded | skipped | failed
    state: Mapped[str] = mapped_column(sa.String(16), default="pending")
    attempts: Mapped[int] = mapped_column(default=0, server_default="0")
    next_at: Mapped[datetime | None] = mapped_column(TZDateTime, default=None)
    sent_at: Mapped[datetime | None] = mapped_column(TZDateTime, default=None)
    error: Mapped[str | None] = mapped_column(sa.Text, default=None)
    created_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow)


class PullSent(Base):
    """What was last written to the provider under a key, and by which version.

    Keys: ``status:<commit id>:<context>`` and ``comment:<repository id>:<pull>``.
    A write locks its key's row (``SELECT ... FOR UPDATE``) for the length of
    the provider call, so two versions never write at once: the older one
    then sees the newer one's (commit, version) and stands down, an
    identical payload is not sent again, and a pull request's comment id
    (64-bit: GitHub's are past 2**31) is created once.
    """

    __tablename__ = "pull_sent"

    key: Mapped[str] = mapped_column(sa.String(400), primary_key=True)
    commit_id: Mapped[int] = mapped_column(default=0)
    report_version: Mapped[int] = mapped_column(default=-1)
    digest: Mapped[str | None] = mapped_column(sa.String(64), default=None)
    comment_id: Mapped[int | None] = mapped_column(sa.BigInteger, default=None)
    updated_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow)
