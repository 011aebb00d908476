"""per-flag commit reports; when retention dropped an upload's raw bytes

Revision ID: 0005
Revises: 0004
"""

from alembic import op
import sqlalchemy as sa


revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "commit_flag_reports",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("commit_id", sa.Integer(), nullable=False),
        sa.Column("flag", sa.String(length=64), nullable=False),
        sa.Column("report", sa.LargeBinary(), nullable=True),
        sa.Column("totals", sa.JSON(), nullable=False),
        sa.Column("uploads", sa.Integer(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["commit_id"], ["commits.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("commit_id", "flag"),
    )
    with op.batch_alter_table("uploads", schema=None) as batch_op:
        batch_op.add_column(sa.Column("raw_dropped_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("uploads", schema=None) as batch_op:
        batch_op.drop_column("raw_dropped_at")
    op.drop_table("commit_flag_reports")
