"""The test-results tables (app/testresults/models.py): the outcome codes and
the keys that make storage once-only."""

from __future__ import annotations

from datetime import date

import pytest
import sqlalchemy as sa

from app.db.models import Upload
from app.runtime.services import Services
from app.testresults.models import (
    OUTCOME_CODES,
    OUTCOME_NAMES,
    TestDaily,
    TestResultUpload,
    TestRun,
)
from tests.support.testresults import repo_and_commit


def an_upload(services: Services) -> tuple[int, int, int]:
    """(repository id, commit id, upload id) of a new upload."""
    repo_id, commit_id = repo_and_commit(services)
    with services.sessions.begin() as session:
        upload = Upload(commit_id=commit_id, raw=b"")
        session.add(upload)
        session.flush()
        return repo_id, commit_id, upload.id


def test_outcomes_are_small_codes_in_a_fixed_order_and_their_names_invert_them() -> None:
    assert OUTCOME_CODES == {"passed": 0, "failed": 1, "error": 2, "skipped": 3}
    assert {OUTCOME_NAMES[code]: code for code in OUTCOME_NAMES} == OUTCOME_CODES


def test_an_upload_is_stored_once_its_row_is_the_fence(services: Services) -> None:
    _, commit_id, upload_id = an_upload(services)
    with services.sessions.begin() as session:
        session.add(TestResultUpload(upload_id=upload_id, commit_id=commit_id, identity=1))
    with pytest.raises(sa.exc.IntegrityError), services.sessions.begin() as session:
        session.add(TestResultUpload(upload_id=upload_id, commit_id=commit_id, identity=1))
    with services.sessions() as session:
        stored = session.scalars(sa.select(TestResultUpload)).one()
    assert (stored.tests, stored.passed, stored.runs_dropped_at) == (0, 0, None)


def test_a_run_is_keyed_by_its_upload_and_its_place_in_it(services: Services) -> None:
    _, commit_id, upload_id = an_upload(services)
    run = {"upload_id": upload_id, "commit_id": commit_id, "test_key": 7, "outcome": 0}
    with services.sessions.begin() as session:
        session.add_all([TestRun(seq=0, **run), TestRun(seq=1, **run)])
    with pytest.raises(sa.exc.IntegrityError), services.sessions.begin() as session:
        session.add(TestRun(seq=1, **run))
    with services.sessions() as session:
        assert session.scalar(sa.select(sa.func.count()).select_from(TestRun)) == 2


def test_a_tests_day_is_counted_apart_on_the_default_branch_and_elsewhere(
    services: Services,
) -> None:
    repo_id, _, _ = an_upload(services)
    day = {"repository_id": repo_id, "test_key": 7, "day": date(2024, 5, 1)}
    with services.sessions.begin() as session:
        session.add_all(
            [TestDaily(default_branch=True, **day), TestDaily(default_branch=False, **day)]
        )
    with pytest.raises(sa.exc.IntegrityError), services.sessions.begin() as session:
        session.add(TestDaily(default_branch=True, **day))
    with services.sessions() as session:
        rows = session.scalars(sa.select(TestDaily)).all()
    assert sorted(r.default_branch for r in rows) == [False, True]
    assert {(r.runs, r.failed, r.duration_sum) for r in rows} == {(0, 0, 0.0)}
