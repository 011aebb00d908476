"""The tables as the code sees them: in step with the migrations, the upload
states, the settled-state fence of notifications, the merge order of uploads."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy.orm import Session

from app.db.engine import make_engine, make_sessionmaker
from app.db.migrate import upgrade
from app.db.models import (
    FINAL_STATES,
    PENDING_STATES,
    Base,
    Commit,
    Notification,
    ReportUpload,
    Repository,
    Upload,
    UploadState,
    is_settled,
    merged_upload_ids,
    utcnow,
)


def schema_differences(url: str) -> list[Any]:
    """What autogenerate would change to make the migrated database match the
    tables of app/db/models.py (others, as the test results', are left out)."""
    ours = {
        mapper.local_table.name
        for mapper in Base.registry.mappers
        if mapper.class_.__module__ == "app.db.models"
    }
    assert {"uploads", "commits", "notifications", "pull_sent"} <= ours

    def elsewhere(diff: Any) -> bool:
        found = diff[1] if isinstance(diff, tuple) and len(diff) > 1 else None
        table = found if isinstance(found, sa.Table) else getattr(found, "table", None)
        return isinstance(table, sa.Table) and table.name not in ours

    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            context = MigrationContext.configure(conn, opts={"compare_type": True})
            return [d for d in compare_metadata(context, Base.metadata) if not elsewhere(d)]
    finally:
        engine.dispose()


def test_the_models_match_the_schema_the_migrations_make_on_sqlite(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'x.db'}"
    upgrade(url)
    assert schema_differences(url) == []


def test_the_models_match_the_schema_the_migrations_make_on_postgresql(pg_url: str) -> None:
    upgrade(pg_url)
    assert schema_differences(pg_url) == []


@pytest.fixture
def session(tmp_path: Path) -> Iterator[Session]:
    url = f"sqlite:///{tmp_path / 'x.db'}"
    upgrade(url)
    engine = make_engine(url)
    with make_sessionmaker(engine)() as opened:
        yield opened
    engine.dispose()


def a_commit(session: Session) -> Commit:
    repo = Repository(name="acme/web")
    commit = Commit(repository=repo, sha="a" * 40)
    session.add(commit)
    session.flush()
    return commit


def test_every_state_is_pending_final_or_awaiting_and_none_is_both() -> None:
    assert set(PENDING_STATES) | set(FINAL_STATES) | {UploadState.AWAITING} == set(UploadState)
    assert not set(PENDING_STATES) & set(FINAL_STATES)
    assert UploadState.AWAITING not in PENDING_STATES
    assert UploadState.MERGED == "merged"  # stored as text


def test_a_new_upload_is_uploaded_without_flags_or_error_and_stamped_in_utc(
    session: Session,
) -> None:
    commit = a_commit(session)
    upload = Upload(commit_id=commit.id, raw=b"x")
    session.add(upload)
    session.flush()
    assert (upload.state, upload.flags, upload.error, upload.redrives) == ("uploaded", [], None, 0)
    assert upload.created_at.tzinfo is not None
    assert utcnow().tzinfo is UTC


def test_a_settled_state_is_notified_once(session: Session) -> None:
    commit = a_commit(session)
    state = {"commit_id": commit.id, "report_version": 2, "uploads_merged": 3, "uploads_errored": 0}
    session.add(Notification(**state))
    session.add(Notification(**{**state, "report_version": 3}))
    session.flush()
    session.add(Notification(**state))
    with pytest.raises(sa.exc.IntegrityError, match="UNIQUE"):
        session.flush()


def test_merged_upload_ids_are_in_merge_order_with_a_doubled_one_twice(session: Session) -> None:
    commit, other = a_commit(session), Commit(repository_id=1, sha="b" * 40)
    session.add(other)
    session.flush()
    uploads = [Upload(commit_id=commit.id, raw=b"") for _ in range(3)]
    session.add_all([*uploads, Upload(commit_id=other.id, raw=b"")])
    session.flush()
    first, second, third = (u.id for u in uploads)
    for version, upload_id in ((2, third), (1, second), (2, first), (3, third)):
        session.add(ReportUpload(commit_id=commit.id, report_version=version, upload_id=upload_id))
    session.flush()
    assert merged_upload_ids(session, commit.id) == [second, third, first, third]
    assert merged_upload_ids(session, other.id) == []


def test_a_commit_is_settled_once_nothing_is_pending() -> None:
    states = {s.value: 0 for s in UploadState}
    assert is_settled(states)
    assert is_settled({**states, "merged": 2, "error": 1, "awaiting": 1})
    for pending in ("uploaded", "processing", "processed"):
        assert not is_settled({**states, pending: 1})
    assert is_settled({}), "a state missing from the counts counts 0"
