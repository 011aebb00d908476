"""a branch's commits newest first

``ix_commits_repository_branch_created`` on commits (repository_id, branch,
created_at): the repository page's coverage chart reads a branch's newest
365 settled commits (``app/web/history.py``), as the badge and the trend
read its newest one; without it PostgreSQL reads every commit of the
repository and sorts them.

Revision ID: 0023
Revises: 0022
"""

from alembic import op

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(
        "ix_commits_repository_branch_created",
        "commits",
        ["repository_id", "branch", "created_at"],
    )


def downgrade() -> None:
    op.drop_index("ix_commits_repository_branch_created", table_name="commits")
