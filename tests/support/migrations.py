"""A migration's round trip (up, down, up again), checked by the columns it adds."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import command

from app.db.migrate import alembic_config, upgrade

Columns = set[tuple[str, str]]


def columns_present(url: str, columns: Columns) -> Columns:
    """Those of ``columns`` ((table, column) pairs) the database at ``url`` has."""
    engine = sa.create_engine(url)
    try:
        inspector = sa.inspect(engine)
        return {
            (table, column)
            for table, column in columns
            if column in {c["name"] for c in inspector.get_columns(table)}
        }
    finally:
        engine.dispose()


def assert_round_trip(url: str, revision: str, previous: str, columns: Columns) -> None:
    """Upgrading to ``revision`` adds ``columns``, downgrading to ``previous``
    takes them away, and upgrading again adds them back."""
    upgrade(url, revision)
    assert columns_present(url, columns) == columns
    command.downgrade(alembic_config(url), previous)
    assert columns_present(url, columns) == set()
    upgrade(url, revision)
    assert columns_present(url, columns) == columns
