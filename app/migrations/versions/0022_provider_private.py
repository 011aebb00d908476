"""whether the Git provider says a repository is private

``repositories.provider_private`` is GitHub's ``private`` (GitLab: a
visibility other than ``public``) as last read from the provider; NULL
until it has been read. A repository private on the provider has the pages
of a ``--private`` one (``app/web/access.py``), and one whose privacy is
unknown shows no source (docs/sign-in.md).

Revision ID: 0022
Revises: 0019
"""

import sqlalchemy as sa
from alembic import op


revision = "0022"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("repositories") as batch:
        batch.add_column(sa.Column("provider_private", sa.Boolean(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("repositories") as batch:
        batch.drop_column("provider_private")
