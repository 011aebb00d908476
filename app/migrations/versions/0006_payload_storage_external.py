"""upload payloads stored out of line without a compression attempt

An upload payload is base64 of zlib (or gzip): PostgreSQL's TOAST
compression (pglz, lz4) cannot shrink it and costs server CPU on every
stored payload. ``STORAGE EXTERNAL`` stores such a value out of line as
is. PostgreSQL only; SQLite has no storage modes.

Revision ID: 0006
Revises: 0005
"""

from alembic import op


revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

COLUMNS = (("uploads", "raw"), ("upload_chunks", "data"))


def _set_storage(storage: str) -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for table, column in COLUMNS:
        op.execute(f"ALTER TABLE {table} ALTER COLUMN {column} SET STORAGE {storage}")


def upgrade() -> None:
    _set_storage("EXTERNAL")


def downgrade() -> None:
    _set_storage("EXTENDED")
