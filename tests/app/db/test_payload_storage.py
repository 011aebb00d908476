"""Upload payloads on PostgreSQL: stored out of line, with no compression attempt."""

from __future__ import annotations

import sqlalchemy as sa

from app.db.engine import make_engine
from app.db.migrate import upgrade


def test_payload_columns_are_stored_external_so_postgresql_never_tries_to_compress_them(
    pg_url: str,
) -> None:
    upgrade(pg_url)
    engine = make_engine(pg_url)
    try:
        with engine.connect() as conn:
            storage = dict(
                conn.execute(
                    sa.text(
                        "SELECT attrelid::regclass::text || '.' || attname, attstorage"
                        " FROM pg_attribute WHERE (attrelid, attname) IN"
                        " (('uploads'::regclass, 'raw'), ('upload_chunks'::regclass, 'data'))"
                    )
                ).all()
            )
            assert storage == {"uploads.raw": "e", "upload_chunks.data": "e"}
    finally:
        engine.dispose()
