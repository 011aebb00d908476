"""``FlagMerge``: each upload's coverage merged into the report of each of its flags."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.coverage import FileCoverage, Report, codec
from app.coverage.columnar import Part
from app.db.models import Commit, CommitFlagReport, Repository, Upload
from app.merge.flag_reports import FlagMerge
from app.testresults.store import TEST_RESULTS_PAYLOAD
from tests.support.pipeline import unit_services


@pytest.fixture
def session(tmp_path: Path) -> Iterator[Session]:
    services = unit_services(tmp_path)
    with services.sessions.begin() as session:
        session.add(Repository(id=1, name="acme/web"))
        session.add(Commit(id=1, repository_id=1, sha="a" * 40))
        session.flush()
        yield session
    services.close()


def upload(session: Session, flags: list[str], payload_format: str | None = None) -> int:
    row = Upload(commit_id=1, flags=flags, raw=b"", payload_format=payload_format)
    session.add(row)
    session.flush()
    return row.id


def part(lines: dict[int, int]) -> Part:
    return Part.from_report(Report({"a.py": FileCoverage(dict(lines))}))


def flag_reports(session: Session) -> dict[str, tuple[dict[int, int], int, int]]:
    """Per flag: a.py's hits per line, lines in its totals, and the uploads counted."""
    rows = session.scalars(sa.select(CommitFlagReport).where(CommitFlagReport.commit_id == 1))
    found = {}
    for row in rows:
        assert row.report is not None
        lines = codec.load(row.report).files["a.py"].lines
        found[row.flag] = (dict(lines), int(row.totals["lines"]), row.uploads)
    return found


def test_an_upload_is_merged_into_the_report_of_each_of_its_flags(session: Session) -> None:
    unit = upload(session, ["unit", "linux"])
    e2e = upload(session, ["e2e", "linux"])
    merge = FlagMerge(session, 1, [unit, e2e])
    merge.add(unit, part({1: 1, 2: 0}))
    merge.add(e2e, part({2: 3}))
    merge.save()
    session.flush()
    assert flag_reports(session) == {
        "unit": ({1: 1, 2: 0}, 2, 1),
        "e2e": ({2: 3}, 1, 1),
        "linux": ({1: 1, 2: 3}, 2, 2),
    }


def test_a_later_pass_merges_onto_the_stored_flag_report(session: Session) -> None:
    first = upload(session, ["unit"])
    merge = FlagMerge(session, 1, [first])
    merge.add(first, part({1: 1, 2: 0}))
    merge.save()
    session.flush()
    second = upload(session, ["unit"])
    merge = FlagMerge(session, 1, [second])
    merge.add(second, part({2: 1, 3: 0}))
    merge.save()
    session.flush()
    assert flag_reports(session) == {"unit": ({1: 1, 2: 1, 3: 0}, 3, 2)}


def test_uploads_without_flags_and_test_results_make_no_flag_report(session: Session) -> None:
    plain = upload(session, [])
    results = upload(session, ["unit"], payload_format=TEST_RESULTS_PAYLOAD)
    merge = FlagMerge(session, 1, [plain, results])
    merge.add(plain, part({1: 1}))
    merge.add(results, part({1: 1}))
    merge.save()
    session.flush()
    assert flag_reports(session) == {}


def test_a_pass_with_no_uploads_touches_nothing(session: Session) -> None:
    merge = FlagMerge(session, 1, [])
    merge.add(42, part({1: 1}))  # an upload the pass was not given: ignored
    merge.save()
    session.flush()
    assert flag_reports(session) == {}
