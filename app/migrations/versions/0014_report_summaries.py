"""per-file totals and the base comparison stored with each report version

``commit_reports.file_totals`` holds the per-file totals of the merged
report and ``commit_reports.comparison`` its comparison with the base found
at merge time (``app.report_summary``), so the pages read them instead of
decoding two whole reports. NULL for versions merged before: the pages then
compute them from the report.

Revision ID: 0014
Revises: 0012
"""

from alembic import op
import sqlalchemy as sa


revision = "0014"
# Re-chained at merge: written against "0006"; "0010" is the head of the
# branch it was built on (two heads would stop ``upgrade head``).
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("commit_reports", schema=None) as batch_op:
        batch_op.add_column(sa.Column("file_totals", sa.LargeBinary(), nullable=True))
        batch_op.add_column(sa.Column("comparison", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("commit_reports", schema=None) as batch_op:
        batch_op.drop_column("comparison")
        batch_op.drop_column("file_totals")
