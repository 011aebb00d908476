"""``upgrade``: create the database if it is missing, then migrate it to a revision."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic.script import ScriptDirectory
from sqlalchemy.engine import make_url

from app.db.migrate import MIGRATIONS_DIR, alembic_config, upgrade
from tests.support.services import pg_admin_url

pytestmark = pytest.mark.timeout(120)


def version_and_tables(url: str) -> tuple[str | None, set[str]]:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            version = conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalar()
        return version, set(sa.inspect(engine).get_table_names())
    finally:
        engine.dispose()


def test_db_upgrade_is_repeatable_on_sqlite(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'x.db'}"
    assert upgrade(url) is False
    assert upgrade(url) is False


def test_a_sqlite_file_in_a_missing_directory_is_created_and_migrated_to_the_newest_revision(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'data' / 'deeper' / 'covworker.db'}"
    assert upgrade(url) is False  # SQLite files are not "created" databases
    head = ScriptDirectory.from_config(alembic_config(url)).get_current_head()
    version, tables = version_and_tables(url)
    assert head is not None and version == head
    assert {"repositories", "commits", "uploads", "notifications"} <= tables


def test_upgrade_stops_at_the_revision_asked_for_and_goes_on_from_there(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'x.db'}"
    upgrade(url, "0001")
    version, tables = version_and_tables(url)
    assert version == "0001" and "uploads" in tables and "pull_deliveries" not in tables
    upgrade(url)
    version, tables = version_and_tables(url)
    assert version != "0001" and "pull_deliveries" in tables


def test_the_migrations_are_found_wherever_the_process_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert MIGRATIONS_DIR.is_absolute() and (MIGRATIONS_DIR / "env.py").is_file()
    upgrade(f"sqlite:///{tmp_path / 'x.db'}", "0001")
    assert version_and_tables(f"sqlite:///{tmp_path / 'x.db'}")[0] == "0001"


def test_a_percent_sign_in_the_url_reaches_alembic_as_it_is() -> None:
    url = "postgresql+psycopg://user:p%40ss%25@db.example:5432/covworker"
    assert alembic_config(url).get_main_option("sqlalchemy.url") == url


def test_a_missing_postgresql_database_is_created_then_migrated(pg_url: str) -> None:
    missing = make_url(pg_url).set(database=make_url(pg_url).database + "_new")
    url = missing.render_as_string(hide_password=False)
    admin = sa.create_engine(pg_admin_url(), isolation_level="AUTOCOMMIT")
    try:
        assert upgrade(url) is True
        assert upgrade(url) is False
        version, tables = version_and_tables(url)
        assert version is not None and "uploads" in tables
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{missing.database}" WITH (FORCE)'))
        admin.dispose()
