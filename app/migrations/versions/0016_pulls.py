"""the pull requests covworker has read from the provider

``pulls`` keeps, per (repository, number), the pull request's base and head
as the provider last described them: the one base rule (``app.bases``) reads
it so the pages, the JSON, the badge, the CLI, the webhook and the pull
request's own feedback compare a commit with the same base.

Revision ID: 0016
Revises: 0015
"""

from alembic import op
import sqlalchemy as sa


revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "pulls",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("repository_id", sa.Integer(), sa.ForeignKey("repositories.id"), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("title", sa.String(1024), nullable=False),
        sa.Column("url", sa.String(2048), nullable=False),
        sa.Column("base_branch", sa.String(255), nullable=False),
        sa.Column("base_sha", sa.String(64), nullable=True),
        sa.Column("head_branch", sa.String(255), nullable=False),
        sa.Column("head_sha", sa.String(64), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("repository_id", "number"),
    )
    op.create_index("ix_pulls_head_sha", "pulls", ["head_sha"])


def downgrade() -> None:
    op.drop_index("ix_pulls_head_sha", table_name="pulls")
    op.drop_table("pulls")
