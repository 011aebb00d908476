"""who named a repository's default branch

``repositories.default_branch_source`` is ``set`` when a person named it
(``covworker repo set --default-branch``) and ``provider`` when it was
learned from GitHub or GitLab; a branch a person set is kept when the
provider says another (``app/pipeline/default_branch.py``).

Revision ID: 0018
Revises: 0017
"""

import sqlalchemy as sa
from alembic import op


revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("repositories") as batch:
        batch.add_column(sa.Column("default_branch_source", sa.String(16), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("repositories") as batch:
        batch.drop_column("default_branch_source")
