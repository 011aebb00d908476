"""gcov JSON (``gcov --json-format``): shapes, gzip, and precise errors."""

from __future__ import annotations

import gzip

import pytest

from app.coverage import parse_report
from app.coverage.limits import ParseLimits
from app.errors import ReportTooLarge
from tests.app.coverage.formats.conftest import refused

pytestmark = pytest.mark.timeout(60)

GCOV = (
    b'{"format_version": "1", "gcc_version": "12.2.0",\n'
    b' "files": [{"file": "/b/src/a.c", "functions": [],\n'
    b'  "lines": [{"line_number": 3, "count": 2, "branches": [{"count": 2}, {"count": 0}]},\n'
    b'            {"line_number": 3, "count": 1, "branches": []},\n'
    b'            {"line_number": 4, "count": 0, "branches": []}]}],\n'
    b' "current_working_directory": "/b", "data_file": "a.gcda"}\n'
)


def test_gcov_json_adds_entries_of_one_line_and_reads_gzip_and_several_documents() -> None:
    fc = parse_report(GCOV).files["src/a.c"]
    assert fc.lines == {3: 3, 4: 0}
    assert (fc.branches[3].covered, fc.branches[3].total) == (1, 2)
    twice = parse_report(gzip.compress(GCOV + GCOV.replace(b"/b/src/a.c", b"/b/src/b.c")))
    assert set(twice.files) == {"src/a.c", "src/b.c"}
    members = gzip.compress(GCOV) + gzip.compress(GCOV.replace(b"/b/src/a.c", b"/b/src/b.c"))
    assert set(parse_report(members).files) == {"src/a.c", "src/b.c"}  # `cat a.gz b.gz`


def test_each_gcov_document_strips_its_own_working_directory_and_keeps_relative_paths() -> None:
    """gcov names sources relative to where it ran, or absolute; that
    directory is not part of the repository path, and each document of a
    ``gcov -t`` stream says its own."""
    relative = GCOV.replace(b'"/b/src/a.c"', b'"src/a.c"')
    assert set(parse_report(relative).files) == {"src/a.c"}
    other = GCOV.replace(b'"/b/src/a.c"', b'"/c/lib/d.c"').replace(b'"/b"', b'"/c"')
    assert set(parse_report(GCOV + other).files) == {"src/a.c", "lib/d.c"}


@pytest.mark.parametrize(
    ("raw", "reason", "line"),
    [
        (GCOV.replace(b'"count": 0, "b', b'"count": -1, "b'), "count of line 4", 2),
        (GCOV.replace(b'"line_number": 4', b'"line_number": "4"'), "line_number", 2),
        (GCOV.replace(b'"file": "/b/src/a.c"', b'"file": ""'), "without a name", 2),
        (GCOV[:-5], "not valid JSON", 6),
        (b'{"gcc_version": "12", "files": 3}', "expected '['", 1),
        (gzip.compress(GCOV)[:-9], "truncated", None),
    ],
)
def test_a_broken_gcov_report_names_the_format_the_problem_and_the_line(
    raw: bytes, reason: str, line: int | None
) -> None:
    error = refused(raw, "gcov JSON", reason)
    if line is not None:  # a truncated gzip stream has no line
        assert error.line == line


def test_a_gzip_bomb_of_gcov_json_is_stopped() -> None:
    bomb = gzip.compress(GCOV + b" " * 5_000_000)
    assert len(bomb) < 100_000
    with pytest.raises(ReportTooLarge, match="unpacked"):
        parse_report(bomb, limits=ParseLimits(max_bytes=1_000_000))
