"""The notification of a settled commit carries its change against the base."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from app.db.models import Commit, CommitReport, Notification
from app.embedded import EmbeddedRuntime
from tests.app.web.conftest import Upload, commit_before_its_uploads, lcov

pytestmark = pytest.mark.timeout(60)

SHA1, SHA2 = "1" * 40, "2" * 40


def notification_of(runtime: EmbeddedRuntime, sha: str) -> Notification:
    with runtime.app.services.sessions() as session:
        found = session.scalars(
            sa.select(Notification)
            .join(Commit, Commit.id == Notification.commit_id)
            .where(Commit.sha == sha)
            .order_by(Notification.report_version.desc())
        ).first()
    assert found is not None
    return found


def test_the_notification_names_the_base_and_the_total_flag_and_file_changes(
    runtime: EmbeddedRuntime, upload: Upload
) -> None:
    upload("acme/web", SHA1, {"a.info": lcov("a.py", {1: 1, 2: 0})}, flags=("unit",), branch="main")
    commit_before_its_uploads(runtime, SHA2, parent=SHA1)
    upload(
        "acme/web",
        SHA2,
        {"a.info": lcov("a.py", {1: 1, 2: 1}) + lcov("b.py", {1: 0})},
        flags=("unit",),
        branch="main",
        parent=SHA1,
    )
    comparison = notification_of(runtime, SHA2).comparison
    assert comparison is not None
    assert comparison["base_commit"] == SHA1
    assert comparison["change"] == pytest.approx(100 * 2 / 3 - 50)
    assert comparison["flags"]["unit"]["change"] == pytest.approx(100 * 2 / 3 - 50)
    assert [f["path"] for f in comparison["top_files"]] == ["a.py", "b.py"]
    first = notification_of(runtime, SHA1).comparison
    assert first is not None and first["base_commit"] is None and first["change"] is None


def test_an_unreadable_base_report_does_not_hold_up_the_notification(
    runtime: EmbeddedRuntime, upload: Upload
) -> None:
    upload("acme/web", SHA1, {"a.info": lcov("a.py", {1: 1})}, branch="main")
    with runtime.app.services.sessions.begin() as session:
        session.execute(
            sa.update(CommitReport).values(report=b"not a report", file_totals=b"not a report")
        )
    commit_before_its_uploads(runtime, SHA2, parent=None)
    upload("acme/web", SHA2, {"a.info": lcov("a.py", {1: 1, 2: 0})}, branch="main")
    comparison = notification_of(runtime, SHA2).comparison
    assert comparison is not None and comparison["change"] is None and comparison["error"]
