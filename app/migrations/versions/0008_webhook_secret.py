"""a per-repository secret signing its webhook bodies

The receiver checks ``X-Covworker-Signature: sha256=<HMAC-SHA256 of the
body>`` with it. Repositories that had a webhook get a secret on first
delivery (``app.pipeline.webhooks``); ``covworker repo set --webhook``
prints it.

Revision ID: 0008
Revises: 0007
"""

import sqlalchemy as sa
from alembic import op


revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("repositories") as batch:
        batch.add_column(sa.Column("webhook_secret", sa.String(128), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("repositories") as batch:
        batch.drop_column("webhook_secret")
