"""test results: JUnit uploads' runs per commit, history per test per day

Revision ID: 0012
Revises: 0011
"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

TZ = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "test_result_uploads",
        sa.Column("upload_id", sa.Integer, sa.ForeignKey("uploads.id"), primary_key=True),
        sa.Column("commit_id", sa.Integer, sa.ForeignKey("commits.id"), nullable=False),
        sa.Column("identity", sa.BigInteger, nullable=False),
        *(
            sa.Column(name, sa.Integer, nullable=False)
            for name in ("tests", "files", "passed", "failed", "errored", "skipped", "flaky")
        ),
        sa.Column("created_at", TZ, nullable=False),
        sa.Column("runs_dropped_at", TZ, nullable=True),
    )
    op.create_index("ix_test_result_uploads_commit_id", "test_result_uploads", ["commit_id"])
    op.create_index("ix_test_result_uploads_created_at", "test_result_uploads", ["created_at"])
    op.create_table(
        "tests",
        sa.Column("repository_id", sa.Integer, sa.ForeignKey("repositories.id"), primary_key=True),
        sa.Column("test_key", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("suite", sa.Text, nullable=False),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("flags", sa.String(1024), nullable=False),
        sa.Column("job", sa.String(255), nullable=False),
        sa.Column("created_at", TZ, nullable=False),
    )
    op.create_table(
        "test_runs",
        sa.Column("upload_id", sa.Integer, sa.ForeignKey("uploads.id"), primary_key=True),
        sa.Column("seq", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("commit_id", sa.Integer, sa.ForeignKey("commits.id"), nullable=False),
        sa.Column("test_key", sa.BigInteger, nullable=False),
        sa.Column("outcome", sa.SmallInteger, nullable=False),
        sa.Column("retried_failures", sa.SmallInteger, nullable=False),
        sa.Column("duration", sa.Float, nullable=False),
        sa.Column("message", sa.Text, nullable=True),
    )
    op.create_index(
        "ix_test_runs_commit_outcome", "test_runs", ["commit_id", "outcome", "retried_failures"]
    )
    op.create_table(
        "test_daily",
        sa.Column("repository_id", sa.Integer, sa.ForeignKey("repositories.id"), primary_key=True),
        sa.Column("test_key", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("day", sa.Date, primary_key=True),
        sa.Column("default_branch", sa.Boolean, primary_key=True),
        sa.Column("runs", sa.Integer, nullable=False),
        sa.Column("passed", sa.Integer, nullable=False),
        sa.Column("failed", sa.Integer, nullable=False),
        sa.Column("skipped", sa.Integer, nullable=False),
        sa.Column("flaky", sa.Integer, nullable=False),
        sa.Column("duration_sum", sa.Float, nullable=False),
    )
    op.create_index("ix_test_daily_day", "test_daily", ["day"])
    op.create_table(
        "test_flakes",
        sa.Column("repository_id", sa.Integer, sa.ForeignKey("repositories.id"), primary_key=True),
        sa.Column("test_key", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("commit_id", sa.Integer, sa.ForeignKey("commits.id"), primary_key=True),
        sa.Column("created_at", TZ, nullable=False),
    )
    op.create_index("ix_test_flakes_created", "test_flakes", ["created_at"])
    with op.batch_alter_table("notifications") as batch:
        batch.add_column(sa.Column("test_results", sa.JSON, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("notifications") as batch:
        batch.drop_column("test_results")
    for table in ("test_flakes", "test_daily", "test_runs", "tests", "test_result_uploads"):
        op.drop_table(table)
