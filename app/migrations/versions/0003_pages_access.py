"""pages: private repositories with a read token, the default branch, the
notification's change against the base

Revision ID: 0003
Revises: 0002
"""

from alembic import op
import sqlalchemy as sa


revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("repositories", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("private", sa.Boolean(), nullable=False, server_default=sa.false())
        )
        batch_op.add_column(sa.Column("read_token_hash", sa.String(length=128), nullable=True))
        batch_op.add_column(sa.Column("default_branch", sa.String(length=255), nullable=True))
    with op.batch_alter_table("notifications", schema=None) as batch_op:
        batch_op.add_column(sa.Column("comparison", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("notifications", schema=None) as batch_op:
        batch_op.drop_column("comparison")
    with op.batch_alter_table("repositories", schema=None) as batch_op:
        batch_op.drop_column("default_branch")
        batch_op.drop_column("read_token_hash")
        batch_op.drop_column("private")
