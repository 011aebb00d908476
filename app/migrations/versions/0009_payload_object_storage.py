"""where an upload's raw report lives when it is in an object store

``uploads.storage_path`` is the object key (``v4/raw/...``) of a payload
kept in S3-compatible storage (``COVWORKER_STORAGE=s3``); NULL when the
payload is in the database (``raw`` or ``upload_chunks``).

Revision ID: 0009
Revises: 0008
"""

from alembic import op
import sqlalchemy as sa


revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("uploads", schema=None) as batch_op:
        batch_op.add_column(sa.Column("storage_path", sa.String(length=1024), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("uploads", schema=None) as batch_op:
        batch_op.drop_column("storage_path")
