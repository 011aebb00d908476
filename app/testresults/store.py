"""A test-results upload's payload -> its runs, its tests and their history.

codecov-cli PUTs ``{"test_results_files": [{"filename", "format":
"base64+compressed", "data"}]}``; each file is JUnit XML. The processor
(``app.pipeline.processor``) calls :func:`store_test_results` for an upload
whose ``payload_format`` is ``test_results`` and merges the empty coverage
report it returns like any other, so the upload goes through the same
states, sweep, finisher and notification as a coverage upload.

Everything of one upload is written in one transaction whose first row is
its ``test_result_uploads`` row: a re-delivered or re-driven upload finds
it and writes nothing twice (not its runs, not its day's counts).
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import date
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.coverage import Report
from app.db.bases import USUAL_DEFAULT_BRANCHES
from app.db.engine import conflict_insert
from app.db.models import Commit, Repository, Upload, utcnow
from app.errors import MalformedPayload, ReportError, ReportTooLarge
from app.ingest.payload import GZIP_MAGIC, InflateBudget, decode_files, json_object
from app.runtime.services import Services
from app.testresults.junit import (
    ERROR,
    FAILED,
    MAX_TEST_CASES,
    PASSED,
    SKIPPED,
    TestCase,
    max_test_cases,
    parse_junit,
)
from app.testresults.models import (
    OUTCOME_CODES,
    TestDaily,
    TestIdentity,
    TestResultUpload,
    TestRun,
)

#: ``Upload.payload_format`` of a test-results upload.
TEST_RESULTS_PAYLOAD = "test_results"
#: The payload's list of JUnit files (codecov-cli's ``{"test_results_files": [...]}``).
TEST_RESULTS_FILES = "test_results_files"
#: ``Upload.report_format`` once its files parsed.
REPORT_FORMAT = "junit"
#: Rows per INSERT statement.
INSERT_BATCH = 5000


@dataclass(frozen=True, slots=True)
class JunitFile:
    name: str
    data: bytes


def decode_test_results_payload(raw: bytes, limit: int) -> list[JunitFile]:
    """The JUnit files of a codecov-cli test-results payload (or one plain
    JUnit document), decompressed within ``limit`` bytes in all (one budget
    for the payload, so many small compressed parts cannot multiply it)."""
    budget = InflateBudget(limit)
    if raw[:2] == GZIP_MAGIC:
        raw = budget.inflate(raw, wbits=16 + zlib.MAX_WBITS, what="the gzip payload")
    body = raw.strip()
    if not body.startswith(b"{"):
        return [JunitFile("report", body)]
    doc = json_object(body, "the test-results payload")
    return [JunitFile(name, data) for name, data in decode_files(doc, TEST_RESULTS_FILES, budget)]


def parse_files(files: Iterable[JunitFile], max_cases: int = MAX_TEST_CASES) -> list[TestCase]:
    """Every case of every file, at most ``max_cases`` in all; a file that
    does not parse, or goes over, fails the upload, named."""
    cases: list[TestCase] = []
    for item in files:
        try:
            cases.extend(parse_junit(item.data, max_cases=max_cases - len(cases)))
        except ReportTooLarge as exc:
            raise ReportTooLarge(f"test results file {item.name}: {exc}") from None
        except ReportError as exc:
            raise MalformedPayload(f"test results file {item.name}: {exc}") from None
    return cases


def test_key(suite: str, name: str, flags: str, job: str) -> int:
    """A test's identity in a repository as one signed 64-bit number."""
    digest = hashlib.blake2b(
        "\x1f".join((suite, name, flags, job)).encode(), digest_size=8
    ).digest()
    return int.from_bytes(digest, "big", signed=True)


def flags_key(flags: Iterable[str]) -> str:
    return ",".join(sorted(set(flags)))


@dataclass(frozen=True, slots=True)
class _Where:
    repository_id: int
    commit_id: int
    flags: str
    job: str
    default_branch: bool


def _locate(session: Session, upload_id: int) -> _Where:
    row = session.execute(
        sa.select(
            Commit.repository_id,
            Upload.commit_id,
            Upload.flags,
            Upload.name,
            Upload.job_code,
            Commit.branch,
            Repository.default_branch,
        )
        .join(Commit, Commit.id == Upload.commit_id)
        .join(Repository, Repository.id == Commit.repository_id)
        .where(Upload.id == upload_id)
    ).one()
    repoid, commitid, flags, name, job_code, branch, default = row
    on_default = bool(branch) and (
        branch == default if default else branch in USUAL_DEFAULT_BRANCHES
    )
    return _Where(
        repoid, commitid, flags_key(flags or []), (name or job_code or "")[:255], on_default
    )


def _batches(rows: list[dict[str, Any]]) -> Iterable[list[dict[str, Any]]]:
    for start in range(0, len(rows), INSERT_BATCH):
        yield rows[start : start + INSERT_BATCH]


def store_test_results(services: Services, upload_id: int, raw: bytes) -> Report:
    """Parse the upload's JUnit files and store its runs, tests and day's
    counts, once; the (empty) coverage report the merge adds for it."""
    with services.sessions() as session:
        if session.get(TestResultUpload, upload_id) is not None:
            return Report()  # stored by an earlier delivery: not parsed again
    with services.parse_budget.parsing():  # COVWORKER_PARSES_AT_ONCE
        max_bytes = services.limits.for_input(len(raw)).max_bytes
        junit_files = decode_test_results_payload(raw, max_bytes)
        if not junit_files:
            raise MalformedPayload("the test-results payload holds no JUnit file")
        try:  # none is fine: a run of no tests
            cases = parse_files(junit_files, max_test_cases(len(raw)))
        except ReportTooLarge as exc:
            raise ReportTooLarge(f"{exc} (the limit for an upload of {len(raw)} bytes)") from None
    with services.sessions.begin() as session:
        where = _locate(session, upload_id)
        tests = collapse(cases, where.flags, where.job)
        counts = UploadCounts()
        for case in tests.values():
            counts.add(case)
        now = utcnow()
        try:
            with session.begin_nested():
                session.add(
                    TestResultUpload(
                        upload_id=upload_id,
                        commit_id=where.commit_id,
                        identity=identity_key(where.flags, where.job),
                        tests=len(tests),
                        files=len(junit_files),
                        **asdict(counts),
                        created_at=now,
                    )
                )
                session.flush()
        except sa.exc.IntegrityError:  # a concurrent delivery stored it
            return Report()
        _write(session, where, upload_id, tests, now.date())
    return Report()


def collapse(cases: list[TestCase], flags: str, job: str) -> dict[int, TestCase]:
    """One case per test of an upload: attempts of a test retried within the
    run (gotestsum ``--rerun-fails`` repeats it) become one case that passed
    after ``retried_failures`` failures, or failed; durations add up."""
    found: dict[int, TestCase] = {}
    for case in cases:
        key = test_key(case.suite, case.name, flags, job)
        seen = found.get(key)
        if seen is None:
            found[key] = TestCase(
                case.suite, case.name, case.outcome, case.duration, case.message,
                case.retried_failures,
            )  # fmt: skip
            continue
        seen.duration += case.duration
        seen.retried_failures += case.retried_failures
        failed_before = seen.outcome in (FAILED, ERROR)
        if case.outcome == PASSED:
            seen.retried_failures += 1 if failed_before else 0
            seen.outcome = PASSED
        elif case.outcome in (FAILED, ERROR):
            if seen.outcome == PASSED:
                seen.retried_failures += 1
            else:
                seen.retried_failures += 1 if failed_before else 0
                seen.outcome = FAILED if FAILED in (case.outcome, seen.outcome) else ERROR
            seen.message = case.message or seen.message
    return found


@dataclass(slots=True)
class UploadCounts:
    """An upload's tests by outcome (each test once): the commit's totals add
    these up for uploads whose tests no other upload of the commit has.
    Each field is the ``TestResultUpload`` column of the same name."""

    passed: int = 0
    failed: int = 0
    errored: int = 0
    skipped: int = 0
    flaky: int = 0

    def add(self, case: TestCase) -> None:
        if case.outcome == PASSED:
            self.passed += 1
            self.flaky += 1 if case.retried_failures else 0
        elif case.outcome == FAILED:
            self.failed += 1
        elif case.outcome == ERROR:
            self.errored += 1
        else:
            self.skipped += 1


def identity_key(flags: str, job: str) -> int:
    """Uploads with the same flags and job may report the same tests."""
    return test_key("", "", flags, job)


def _write(
    session: Session, where: _Where, upload_id: int, cases: dict[int, TestCase], day: date
) -> None:
    tests: list[dict[str, Any]] = []
    runs: list[dict[str, Any]] = []
    day_rows: list[dict[str, Any]] = []
    now = utcnow()
    for seq, (key, case) in enumerate(sorted(cases.items())):  # one lock order: no deadlocks
        tests.append(
            {
                "repository_id": where.repository_id, "test_key": key, "suite": case.suite,
                "name": case.name, "flags": where.flags, "job": where.job, "created_at": now,
            }
        )  # fmt: skip
        runs.append(
            {
                "upload_id": upload_id,
                "seq": seq,
                "commit_id": where.commit_id,
                "test_key": key,
                "outcome": OUTCOME_CODES[case.outcome],
                "retried_failures": min(case.retried_failures, 32767),
                "duration": case.duration,
                "message": case.message,
            }
        )
        day_rows.append(
            {
                "repository_id": where.repository_id,
                "test_key": key,
                "day": day,
                "default_branch": where.default_branch,
                "runs": 1,
                "passed": int(case.outcome == PASSED),
                "failed": int(case.outcome in (FAILED, ERROR)),
                "skipped": int(case.outcome == SKIPPED),
                "flaky": int(case.outcome == PASSED and case.retried_failures > 0),
                "duration_sum": case.duration,
            }
        )
    for batch in _batches(tests):
        session.execute(conflict_insert(session, TestIdentity).on_conflict_do_nothing(), batch)
    for batch in _batches(runs):
        session.execute(sa.insert(TestRun), batch)
    insert = conflict_insert(session, TestDaily)
    upsert = insert.on_conflict_do_update(
        index_elements=["repository_id", "test_key", "day", "default_branch"],
        set_={
            name: getattr(TestDaily, name) + getattr(insert.excluded, name)
            for name in ("runs", "passed", "failed", "skipped", "flaky", "duration_sum")
        },
    )
    for batch in _batches(day_rows):
        session.execute(upsert, batch)


__all__ = [
    "FAILED",
    "REPORT_FORMAT",
    "TEST_RESULTS_PAYLOAD",
    "decode_test_results_payload",
    "parse_files",
    "store_test_results",
    "test_key",
]

test_key.__test__ = False  # type: ignore[attr-defined]  # pytest: not a test
