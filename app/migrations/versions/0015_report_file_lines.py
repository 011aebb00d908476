"""each file's lines stored in windows with its report version

``report_file_lines`` holds, per (commit, report version, digest of the
path), the file's
instrumented lines in windows of a few hundred lines, and
``commit_reports.lines_version`` the version they were stored for
(``app.file_lines``): the file page reads the rows around the line it shows
instead of decoding the merged report. Versions merged before have no rows
(``lines_version`` NULL): the page decodes the report as before.

Revision ID: 0015
Revises: 0014
"""

from alembic import op
import sqlalchemy as sa


revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "report_file_lines",
        sa.Column("commit_id", sa.Integer(), sa.ForeignKey("commits.id"), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("path_key", sa.LargeBinary(16), nullable=False),
        sa.Column("first_line", sa.BigInteger(), nullable=False),
        sa.Column("first_index", sa.BigInteger(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.Column("file_lines", sa.BigInteger(), nullable=False),
        sa.Column("file_hits", sa.BigInteger(), nullable=False),
        sa.Column("file_misses", sa.BigInteger(), nullable=False),
        sa.Column("file_partials", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("commit_id", "version", "path_key", "first_line"),
    )
    with op.batch_alter_table("commit_reports", schema=None) as batch_op:
        batch_op.add_column(sa.Column("lines_version", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("commit_reports", schema=None) as batch_op:
        batch_op.drop_column("lines_version")
    op.drop_table("report_file_lines")
