"""Apply the Alembic migrations (``covworker db upgrade``)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config

from app.db.engine import create_database_if_missing

MIGRATIONS_DIR = Path(__file__).resolve().parent.parent / "migrations"


def alembic_config(url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def upgrade(url: str, revision: str = "head") -> bool:
    """Create the database if missing, then migrate it; True if it was created."""
    created = create_database_if_missing(url)
    command.upgrade(alembic_config(url), revision)
    return created
