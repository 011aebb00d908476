"""parse_report: the format detected from the content picks the parser, gzip
is unpacked within the limits, a report naming nothing is refused, and
whatever escapes a parser is a ReportError naming the format."""

from __future__ import annotations

import gzip
from collections.abc import Callable

import pytest

from app.coverage import ParseLimits, Report, parse_report
from app.coverage.detect import COBERTURA, GO, LCOV
from app.coverage.limits import NO_CODE
from app.coverage.parse import PARSERS
from app.errors import MalformedReport, ReportError, ReportTooLarge, UnknownFormat

pytestmark = pytest.mark.timeout(20)

Parser = Callable[[bytes, ParseLimits, tuple[str, ...]], Report]

#: One run (a.py: line 1 ran twice, line 2 never) in four formats.
SAME_RUN = {
    "lcov": b"SF:a.py\nDA:1,2\nDA:2,0\nend_of_record\n",
    "cobertura": b"<coverage><packages><package><classes><class filename='a.py'><lines>"
    b'<line number="1" hits="2"/><line number="2" hits="0"/>'
    b"</lines></class></classes></package></packages></coverage>",
    "go": b"mode: count\na.py:1.1,1.9 1 2\na.py:2.1,2.9 1 0\n",
    "jacoco": b"<report name='r'><package name=''><sourcefile name='a.py'>"
    b'<line nr="1" mi="0" ci="2"/><line nr="2" mi="1" ci="0"/></sourcefile></package></report>',
}


@pytest.mark.parametrize("raw", SAME_RUN.values(), ids=SAME_RUN.keys())
def test_each_format_is_read_by_its_own_parser_into_the_same_report(raw: bytes) -> None:
    report = parse_report(raw)
    assert set(report.files) == {"a.py"}
    assert report.files["a.py"].lines.keys() == {1, 2}
    assert (report.totals().hits, report.totals().misses) == (1, 1)


def test_a_format_given_by_the_caller_is_used_instead_of_detecting_one() -> None:
    with pytest.raises(MalformedReport) as caught:
        parse_report(SAME_RUN["cobertura"], fmt=LCOV)
    assert caught.value.fmt == "LCOV"
    assert parse_report(SAME_RUN["cobertura"], fmt=COBERTURA).files["a.py"].lines == {1: 2, 2: 0}


def test_content_of_no_known_format_is_refused_before_any_parser_runs() -> None:
    with pytest.raises(UnknownFormat, match="not a recognised"):
        parse_report(b"coverage: 81% of statements\n")


def test_roots_given_in_any_iterable_make_absolute_paths_repository_relative() -> None:
    raw = b"SF:/ci/build/src/a.py\nDA:1,1\nend_of_record\n"
    assert set(parse_report(raw, roots=iter(["/ci/build"])).files) == {"src/a.py"}
    assert set(parse_report(raw).files) == {"/ci/build/src/a.py"}


@pytest.mark.parametrize("name", ["lcov", "cobertura", "go"])
def test_a_gzip_compressed_report_is_read_as_the_report_it_holds(name: str) -> None:
    raw = SAME_RUN[name]
    assert parse_report(gzip.compress(raw)) == parse_report(raw)


def test_gzip_that_breaks_after_its_head_is_malformed_naming_the_format_it_holds() -> None:
    raw = b"".join(b"SF:f%d.py\nDA:1,%d\nend_of_record\n" % (i, i) for i in range(20_000))
    packed = gzip.compress(raw)
    broken = packed[:-8] + bytes(b ^ 0xFF for b in packed[-8:-4]) + packed[-4:]  # its CRC
    with pytest.raises(MalformedReport) as caught:
        parse_report(broken)
    assert caught.value.fmt == "LCOV"
    assert "gzip" in caught.value.reason


def test_a_gzip_report_is_refused_once_it_unpacks_past_the_byte_limit() -> None:
    raw = SAME_RUN["lcov"] + b"\n" * 5_000
    packed = gzip.compress(raw)
    assert parse_report(packed, limits=ParseLimits(max_bytes=len(raw))).files
    with pytest.raises(ReportTooLarge, match=f"over the limit of {len(raw) - 1} bytes unpacked"):
        parse_report(packed, limits=ParseLimits(max_bytes=len(raw) - 1))


def test_a_report_over_the_byte_limit_is_refused_before_it_is_read() -> None:
    with pytest.raises(ReportTooLarge, match="over the limit of 10 bytes"):
        parse_report(b"\x00" * 11, limits=ParseLimits(max_bytes=10))


def test_without_limits_the_defaults_apply() -> None:
    """The default largest line number is 10,000,000: a Go block past it is refused."""
    raw = b"mode: set\na.go:10000001.1,10000001.9 1 1\n"
    with pytest.raises(MalformedReport, match="impossible line range"):
        parse_report(raw)
    wider = ParseLimits(max_line_number=20_000_000)
    assert parse_report(raw, limits=wider).files["a.go"].lines == {10_000_001: 1}


def _parser_raising(exc: BaseException) -> Parser:
    def parser(raw: bytes, limits: ParseLimits, roots: tuple[str, ...]) -> Report:
        raise exc

    return parser


@pytest.mark.parametrize(
    ("exc", "error", "message"),
    [
        (KeyError("lines"), MalformedReport, "malformed Go coverprofile report: unreadable report"),
        (ZeroDivisionError("bug"), MalformedReport, r"ZeroDivisionError\('bug'\)"),
        (RecursionError(), MalformedReport, "Go coverprofile report: the report is nested too"),
        (MemoryError(), ReportTooLarge, "Go coverprofile report is too large to parse"),
    ],
)
def test_an_unexpected_exception_from_a_parser_becomes_a_report_error_naming_the_format(
    exc: BaseException, error: type[ReportError], message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(PARSERS, GO, _parser_raising(exc))
    with pytest.raises(error, match=message):
        parse_report(SAME_RUN["go"])


def test_a_report_error_from_a_parser_is_raised_as_it_is(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    mine = ReportTooLarge("Go coverprofile report names more than 3 files")
    monkeypatch.setitem(PARSERS, GO, _parser_raising(mine))
    with pytest.raises(ReportTooLarge) as caught:
        parse_report(SAME_RUN["go"])
    assert caught.value is mine


def test_an_empty_report_is_refused_unless_it_says_the_project_has_no_code(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    said = Report()
    said.warnings.append(NO_CODE)
    monkeypatch.setitem(PARSERS, GO, lambda raw, limits, roots: Report())
    with pytest.raises(MalformedReport, match="holds no files and no lines") as caught:
        parse_report(SAME_RUN["go"])
    assert caught.value.fmt == "Go coverprofile"
    monkeypatch.setitem(PARSERS, GO, lambda raw, limits, roots: said)
    assert parse_report(SAME_RUN["go"]) is said


def test_a_real_report_of_no_files_is_refused_and_one_saying_no_code_is_accepted() -> None:
    with pytest.raises(MalformedReport, match="holds no files and no lines"):
        parse_report(b"<coverage><packages/></coverage>")
    assert parse_report(b"mode: count\n").warnings == [NO_CODE]
