"""http ingestion: upload metadata, payload chunks, commit branch/parent/PR, repository token hash

Revision ID: 0002
Revises: 0001
"""

from typing import Any

from alembic import op
import sqlalchemy as sa


revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upload_columns() -> list[sa.Column[Any]]:
    return [
        sa.Column("payload_format", sa.String(length=16), nullable=True),
        sa.Column("name", sa.String(length=100), nullable=True),
        sa.Column("job_code", sa.String(length=255), nullable=True),
        sa.Column("build_code", sa.String(length=255), nullable=True),
        sa.Column("build_url", sa.String(length=2048), nullable=True),
        sa.Column("ci_service", sa.String(length=64), nullable=True),
        sa.Column("env", sa.JSON(), nullable=True),
        sa.Column("branch", sa.String(length=255), nullable=True),
        sa.Column("pullid", sa.Integer(), nullable=True),
        sa.Column("parent_commit_id", sa.String(length=64), nullable=True),
        sa.Column("warnings", sa.JSON(), nullable=True),
    ]


def upgrade() -> None:
    with op.batch_alter_table("repositories", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("service", sa.String(length=32), nullable=False, server_default="github")
        )
        batch_op.add_column(sa.Column("upload_token_hash", sa.String(length=64), nullable=True))
        batch_op.create_unique_constraint(
            "uq_repositories_upload_token_hash", ["upload_token_hash"]
        )
    with op.batch_alter_table("commits", schema=None) as batch_op:
        batch_op.add_column(sa.Column("branch", sa.String(length=255), nullable=True))
        batch_op.add_column(sa.Column("parent_commit_id", sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column("pullid", sa.Integer(), nullable=True))
    with op.batch_alter_table("uploads", schema=None) as batch_op:
        for column in upload_columns():
            batch_op.add_column(column)
    op.create_table(
        "upload_chunks",
        sa.Column("upload_id", sa.Integer(), nullable=False),
        sa.Column("seq", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(["upload_id"], ["uploads.id"]),
        sa.PrimaryKeyConstraint("upload_id", "seq"),
    )


def downgrade() -> None:
    op.drop_table("upload_chunks")
    with op.batch_alter_table("uploads", schema=None) as batch_op:
        for column in reversed(upload_columns()):
            batch_op.drop_column(column.name)
    with op.batch_alter_table("commits", schema=None) as batch_op:
        batch_op.drop_column("pullid")
        batch_op.drop_column("parent_commit_id")
        batch_op.drop_column("branch")
    with op.batch_alter_table("repositories", schema=None) as batch_op:
        batch_op.drop_constraint("uq_repositories_upload_token_hash", type_="unique")
        batch_op.drop_column("upload_token_hash")
        batch_op.drop_column("service")
