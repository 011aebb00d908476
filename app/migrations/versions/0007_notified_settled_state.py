"""a notification per settled state: (report version, merged, failed)

A commit is notified once per settled state, not once per report version:
an upload that fails after the commit was notified changes the count of
failed uploads without a new report version, and must be notified too.
The unique key that fences ``notify`` becomes (commit, report version,
uploads merged, uploads failed). An index on uploads (commit, state) makes
counting a commit's uploads by state, which deciding "notified?" needs,
an index scan.

Revision ID: 0007
Revises: 0006
"""

from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

#: Names SQLite's unnamed unique key gets when the batch copies the table.
_NAMES = {"uq": "uq_%(table_name)s_%(column_0_N_name)s"}
OLD = ("commit_id", "report_version")
NEW = ("commit_id", "report_version", "uploads_merged", "uploads_errored")
NEW_NAME = "uq_notifications_settled_state"


def _old_name() -> str:
    if op.get_bind().dialect.name == "postgresql":
        return "notifications_commit_id_report_version_key"  # PostgreSQL's own name
    return "uq_notifications_commit_id_report_version"


def upgrade() -> None:
    with op.batch_alter_table("notifications", naming_convention=_NAMES) as batch:
        batch.drop_constraint(_old_name(), type_="unique")
        batch.create_unique_constraint(NEW_NAME, list(NEW))
    op.create_index("ix_uploads_commit_id_state", "uploads", ["commit_id", "state"])


def downgrade() -> None:
    op.drop_index("ix_uploads_commit_id_state", table_name="uploads")
    with op.batch_alter_table("notifications", naming_convention=_NAMES) as batch:
        batch.drop_constraint(NEW_NAME, type_="unique")
        batch.create_unique_constraint(_old_name(), list(OLD))
