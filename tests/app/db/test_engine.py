"""Engine set-up: lz4 for the large values the api stores."""

from __future__ import annotations

import sqlalchemy as sa

from app.db.engine import make_engine, prefer_lz4_toast


def test_an_api_engine_compresses_large_values_with_lz4_on_postgresql(pg_url: str) -> None:
    engine = make_engine(pg_url)
    plain = make_engine(pg_url)
    prefer_lz4_toast(engine)
    try:
        with engine.connect() as conn:
            assert conn.scalar(sa.text("SHOW default_toast_compression")) == "lz4"
            conn.execute(sa.text("CREATE TEMP TABLE t (raw bytea)"))
            conn.execute(sa.text("INSERT INTO t VALUES (:raw)"), {"raw": b"ab" * 100_000})
            method = conn.scalar(sa.text("SELECT pg_column_compression(raw) FROM t"))
            assert method == "lz4"
            # The session keeps working in transactions after the setting.
            conn.rollback()
        with plain.connect() as conn:  # other engines keep the server's default
            setting, default = conn.execute(
                sa.text(
                    "SELECT setting, reset_val FROM pg_settings"
                    " WHERE name = 'default_toast_compression'"
                )
            ).one()
            assert setting == default
    finally:
        engine.dispose()
        plain.dispose()
