"""the branch lines of each file with its stored line windows

``report_file_lines.file_branches`` is the file's ``Totals.branches`` (the
lines that carry branches, Codecov's ``ReportTotals.branches``), repeated in
each window as the other file totals are. Rows stored before it read 0.

Revision ID: 0017
Revises: 0016
"""

from alembic import op
import sqlalchemy as sa


revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("report_file_lines") as batch:
        batch.add_column(
            sa.Column("file_branches", sa.BigInteger(), nullable=False, server_default="0")
        )


def downgrade() -> None:
    with op.batch_alter_table("report_file_lines") as batch:
        batch.drop_column("file_branches")
