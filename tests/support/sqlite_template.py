"""Migrated SQLite files for the tests, copied from one migrated per process.

Hundreds of tests start on a new SQLite file (``unit_services``, the
embedded runtime), and migrating one takes Alembic about 0.14 s: most of
the fast loop's time. ``upgrade_from_template`` stands in for
``alembic.command.upgrade`` for the tests (``tests/conftest.py``): to
``head`` on a SQLite file that does not exist yet or is empty, it copies a
file migrated once in this process (SQLite's backup API, a consistent
copy); anything else (another revision, PostgreSQL, a file with tables) is
Alembic's own upgrade.
"""

from __future__ import annotations

import atexit
import shutil
import sqlite3
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from alembic.config import Config
from sqlalchemy.engine import make_url

Upgrade = Callable[..., Any]


class SqliteTemplate:
    def __init__(self, upgrade: Upgrade) -> None:
        self._upgrade = upgrade
        self._template: Path | None = None

    def upgrade(self, config: Config, revision: str, *args: Any, **kwargs: Any) -> Any:
        target = _new_sqlite_file(config)
        if revision != "head" or target is None or args or kwargs:
            return self._upgrade(config, revision, *args, **kwargs)
        if self._template is None:
            folder = Path(tempfile.mkdtemp(prefix="covworker-template-"))
            atexit.register(shutil.rmtree, folder, ignore_errors=True)  # this process's
            template = folder / "migrated.db"
            migrated = Config()
            for key in ("script_location", "sqlalchemy.url"):
                migrated.set_main_option(key, config.get_main_option(key) or "")
            migrated.set_main_option("sqlalchemy.url", f"sqlite:///{template}")
            self._upgrade(migrated, "head")
            self._template = template
        with sqlite3.connect(self._template) as source, sqlite3.connect(target) as copy:
            copy.execute("PRAGMA synchronous=OFF")  # as every test connection (tests/conftest.py)
            source.backup(copy)
        return None


def _new_sqlite_file(config: Config) -> Path | None:
    """The SQLite file ``config`` names if it has no tables yet (None otherwise)."""
    url = make_url(config.get_main_option("sqlalchemy.url") or "")
    if url.get_backend_name() != "sqlite" or not url.database or url.database == ":memory:":
        return None
    path = Path(url.database)
    if path.exists() and path.stat().st_size > 0:
        with sqlite3.connect(path) as db:
            if db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
                return None
    return path
