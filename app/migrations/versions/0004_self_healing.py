"""self-healing: instance id, re-drive count, webhook outbox

Revision ID: 0004
Revises: 0003
"""

import uuid
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # One row: the id of this database, created with the schema. Redis keys
    # carry it, so a recreated or restored database never reads the state
    # Redis kept for another one.
    instance = op.create_table(
        "instance",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        # The token of Redis's epoch marker; NULL until a worker or sweep first sets it.
        sa.Column("redis_epoch", sa.String(length=32), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.bulk_insert(
        instance, [{"id": uuid.uuid4().hex, "created_at": datetime.now(UTC), "redis_epoch": None}]
    )
    with op.batch_alter_table("uploads") as batch:
        batch.add_column(sa.Column("redrives", sa.Integer(), nullable=False, server_default="0"))
    # Which uploads each report version added: rows appended per merge pass,
    # instead of a commit-wide array rewritten by every pass. No unique key
    # on the upload: the fence is the upload's state; a double merge would show.
    op.create_table(
        "report_uploads",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("commit_id", sa.Integer(), nullable=False),
        sa.Column("report_version", sa.Integer(), nullable=False),
        sa.Column("upload_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["commit_id"], ["commits.id"]),
        sa.ForeignKeyConstraint(["upload_id"], ["uploads.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_report_uploads_commit_id", "report_uploads", ["commit_id"])
    op.execute(
        "INSERT INTO report_uploads (commit_id, report_version, upload_id) "
        "SELECT commit_id, COALESCE(merged_version, 0), id FROM uploads WHERE state = 'merged'"
    )
    with op.batch_alter_table("commit_reports") as batch:
        batch.drop_column("upload_ids")
    # The notifications table is the webhooks' outbox (app.pipeline.webhooks).
    with op.batch_alter_table("notifications") as batch:
        batch.add_column(
            sa.Column("webhook_attempts", sa.Integer(), nullable=False, server_default="0")
        )
        batch.add_column(sa.Column("webhook_next_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("webhook_failed_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("webhook_error", sa.Text(), nullable=True))
        batch.create_index("ix_notifications_webhook_next_at", ["webhook_next_at"])


def downgrade() -> None:
    with op.batch_alter_table("commit_reports") as batch:
        batch.add_column(sa.Column("upload_ids", sa.JSON(), nullable=False, server_default="[]"))
    op.drop_index("ix_report_uploads_commit_id", table_name="report_uploads")
    op.drop_table("report_uploads")
    with op.batch_alter_table("notifications") as batch:
        batch.drop_index("ix_notifications_webhook_next_at")
        for column in ("webhook_error", "webhook_failed_at", "webhook_next_at", "webhook_attempts"):
            batch.drop_column(column)
    with op.batch_alter_table("uploads") as batch:
        batch.drop_column("redrives")
    op.drop_table("instance")
