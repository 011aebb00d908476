"""a repository's stored codecov.yml; carried-forward flag reports

``repositories.codecov_yaml`` is the YAML ``covworker repo set --yaml``
stores (used when the provider has none at the head commit);
``repositories.fetched_codecov_yaml`` the one last read from the provider
(the merge's carryforward uses it, as the head's own is not fetched yet).
``commit_flag_reports.carried_from`` is the ancestor sha a flag report was
carried from (NULL: uploaded). ``commit_reports.uploaded_report`` is the
merge of the commit's own uploads, kept only while some flag is carried, so
an upload of a carried flag can replace the carried coverage.

Revision ID: 0010
Revises: 0006
"""

from alembic import op
import sqlalchemy as sa


revision = "0010"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("repositories", schema=None) as batch_op:
        batch_op.add_column(sa.Column("codecov_yaml", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("fetched_codecov_yaml", sa.Text(), nullable=True))
    with op.batch_alter_table("commit_flag_reports", schema=None) as batch_op:
        batch_op.add_column(sa.Column("carried_from", sa.String(length=64), nullable=True))
    with op.batch_alter_table("commit_reports", schema=None) as batch_op:
        batch_op.add_column(sa.Column("uploaded_report", sa.LargeBinary(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("commit_reports", schema=None) as batch_op:
        batch_op.drop_column("uploaded_report")
    with op.batch_alter_table("commit_flag_reports", schema=None) as batch_op:
        batch_op.drop_column("carried_from")
    with op.batch_alter_table("repositories", schema=None) as batch_op:
        batch_op.drop_column("fetched_codecov_yaml")
        batch_op.drop_column("codecov_yaml")
