"""the bad records an upload's parser skipped

``uploads.skipped_records`` is ``{"count": n, "named": [[record, where], ...]}``
(at most five named, each record cut to 60 characters:
``app/coverage/skipped.py``), shown by ``covworker status`` and the commit
page; NULL when nothing was skipped.

Revision ID: 0019
Revises: 0018
"""

import sqlalchemy as sa
from alembic import op


revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("uploads") as batch:
        batch.add_column(sa.Column("skipped_records", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("uploads") as batch:
        batch.drop_column("skipped_records")
