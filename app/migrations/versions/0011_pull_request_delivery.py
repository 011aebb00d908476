"""pull-request feedback's outbox and what was last sent

``pull_deliveries``: one row per (commit, report version, target) — the
``prepare`` step, each ``status:<context>`` and the ``comment`` — retried
on its own schedule. ``pull_sent``: per status context of a commit and per
pull request's comment, the (commit, version) that last wrote it, a digest
of what it wrote, and the comment's id (BIGINT).

Revision ID: 0011
Revises: 0010
"""

from alembic import op
import sqlalchemy as sa


revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "pull_deliveries",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True),
        sa.Column("commit_id", sa.Integer(), sa.ForeignKey("commits.id"), nullable=False),
        sa.Column("report_version", sa.Integer(), nullable=False),
        sa.Column("target", sa.String(length=255), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("attempts", sa.Integer(), server_default="0", nullable=False),
        sa.Column("next_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("sent_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("commit_id", "report_version", "target"),
    )
    op.create_index("ix_pull_deliveries_commit_id", "pull_deliveries", ["commit_id"])
    op.create_index("ix_pull_deliveries_state_next_at", "pull_deliveries", ["state", "next_at"])
    op.create_table(
        "pull_sent",
        sa.Column("key", sa.String(length=400), primary_key=True),
        sa.Column("commit_id", sa.Integer(), nullable=False),
        sa.Column("report_version", sa.Integer(), nullable=False),
        sa.Column("digest", sa.String(length=64), nullable=True),
        sa.Column("comment_id", sa.BigInteger(), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("pull_sent")
    op.drop_index("ix_pull_deliveries_state_next_at", table_name="pull_deliveries")
    op.drop_index("ix_pull_deliveries_commit_id", table_name="pull_deliveries")
    op.drop_table("pull_deliveries")
