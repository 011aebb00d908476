"""The malformed-input matrix: every case gets a readable error, never a crash or hang.

Each case names the error class expected and, where the parser can know
it, the line of the report the problem is on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from app.coverage import ParseLimits, parse_report
from app.coverage.detect import tried
from app.errors import MalformedReport, ReportError, ReportTooLarge, UnknownFormat

pytestmark = pytest.mark.timeout(20)


def billion_laughs(root: bytes) -> bytes:
    entities = [b'<!ENTITY lol0 "lol">']
    for i in range(1, 10):
        entities.append(b'<!ENTITY lol%d "%s">' % (i, b"&lol%d;" % (i - 1) * 10))
    return (
        b'<?xml version="1.0"?>\n<!DOCTYPE %s [' % root
        + b"".join(entities)
        + b"]>\n<%s>&lol9;</%s>" % (root, root)
    )


def xxe(root: bytes) -> bytes:
    return (
        b'<?xml version="1.0"?>\n<!DOCTYPE %s [<!ENTITY x SYSTEM "file:///etc/passwd">]>\n'
        b"<%s>&x;</%s>" % (root, root, root)
    )


def parameter_entity(root: bytes) -> bytes:
    return (
        b'<?xml version="1.0"?>\n<!DOCTYPE %s [<!ENTITY %% p SYSTEM "http://127.0.0.1:9/x">%%p;]>'
        b"\n<%s/>" % (root, root)
    )


@dataclass(frozen=True)
class Case:
    name: str
    raw: bytes
    error: type[ReportError] = MalformedReport
    line: int | None = None

    def __str__(self) -> str:
        return self.name


def on_line(line: int, wrap: Callable[[bytes], bytes], bad: dict[str, bytes]) -> list[Case]:
    """A malformed case per bad element of ``bad``, each put by ``wrap`` into
    an otherwise good document, where it stands on line ``line``."""
    return [Case(name, wrap(element), line=line) for name, element in bad.items()]


def only_bad(wrap: Callable[[bytes], bytes], bad: dict[str, bytes]) -> list[Case]:
    """A report whose one line record is bad: skipped, so nothing is left to
    read and the report is refused (naming the record, not a line)."""
    return [Case(f"only {name}", wrap(element)) for name, element in bad.items()]


def entity_attacks(root: bytes) -> list[Case]:
    """The entity attacks every XML format is refused, against its root element."""
    return [
        Case("billion laughs", billion_laughs(root)),
        Case("external entity", xxe(root)),
        Case("external parameter entity", parameter_entity(root)),
    ]


COB_HEAD = b'<?xml version="1.0" ?>\n<coverage version="7"><packages><package name="p"><classes>\n'
COB_TAIL = b"\n</classes></package></packages></coverage>\n"


def cob(lines: bytes, cls: bytes = b'<class name="a" filename="a.py">') -> bytes:
    return COB_HEAD + cls + b"<lines>\n" + lines + b"\n</lines></class>" + COB_TAIL


GOOD_COB = cob(b'<line number="1" hits="1"/>')
COBERTURA = [
    Case("empty", b"", UnknownFormat),
    Case("only whitespace", b"  \n\t ", UnknownFormat),
    Case("truncated mid-document", GOOD_COB[: len(GOOD_COB) // 2]),
    Case("truncated inside a tag", GOOD_COB[: GOOD_COB.index(b"hits=") + 3]),
    Case("wrong root element", b"<?xml version='1.0'?><coverage2/>", UnknownFormat),
    Case("html instead of xml", b"<html><body>502 Bad Gateway</body></html>", UnknownFormat),
    # a report whose every line record is bad: each is skipped, then nothing is left
    *only_bad(
        cob,
        {
            "line number not a number": b'<line number="x" hits="1"/>',
            "hits not a number": b'<line number="1" hits="many"/>',
            "negative hits": b'<line number="1" hits="-3"/>',
            "fractional hits": b'<line number="1" hits="1.5"/>',
            "nan hits": b'<line number="1" hits="nan"/>',
            "negative line number": b'<line number="-2" hits="1"/>',
            "huge line number": b'<line number="99999999999" hits="1"/>',
            "line without number": b'<line hits="1"/>',
            "line without hits": b'<line number="1"/>',
        },
    ),
    Case("class inside a class", cob(b'<class filename="b.py"/>'), line=4),
    Case("only a class without filename", cob(b'<line number="1" hits="1"/>', cls=b"<class>")),
    Case("mismatched tags", COB_HEAD + b"<class filename='a.py'><lines></class>" + COB_TAIL),
    Case("non-UTF-8 bytes", cob(b'<line number="1" hits="1"/><!-- \xff\xfe -->')),
    Case("binary garbage after the root", GOOD_COB + b"\x00\x01\x02garbage"),
    Case("binary garbage", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", UnknownFormat),
    Case("undefined entity", cob(b'<line number="1" hits="1"/>&nope;')),
    *entity_attacks(b"coverage"),
    Case("deep nesting", b"<coverage>" + b"<a>" * 100_000 + b"</a>" * 100_000 + b"</coverage>"),
]

JAC_HEAD = (
    b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    b'<!DOCTYPE report PUBLIC "-//JACOCO//DTD Report 1.1//EN" "report.dtd">\n'
    b'<report name="r"><package name="com/x">\n'
)


def jac(lines: bytes, sourcefile: bytes = b'<sourcefile name="A.java">') -> bytes:
    return JAC_HEAD + sourcefile + b"\n" + lines + b"\n</sourcefile></package></report>\n"


GOOD_JAC = jac(b'<line nr="1" mi="0" ci="2" mb="0" cb="0"/>')
JACOCO = [
    Case("empty", b"", UnknownFormat),
    Case("truncated mid-document", GOOD_JAC[: len(GOOD_JAC) * 2 // 3]),
    Case("truncated inside the prolog", JAC_HEAD[:120], UnknownFormat),
    Case("wrong root element", b'<?xml version="1.0"?><reports/>', UnknownFormat),
    *only_bad(
        jac,
        {
            "line nr not a number": b'<line nr="one" mi="0" ci="1" mb="0" cb="0"/>',
            "line without nr": b'<line mi="0" ci="1" mb="0" cb="0"/>',
            "negative covered instructions": b'<line nr="1" mi="0" ci="-1"/>',
            "negative missed branches": b'<line nr="1" mi="0" ci="1" mb="-2" cb="0"/>',
            "covered branches not a number": b'<line nr="1" ci="1" mb="0" cb="x"/>',
            "fractional counter": b'<line nr="1" mi="0.5" ci="1"/>',
            "negative line number": b'<line nr="-1" mi="0" ci="1"/>',
            "zero line number": b'<line nr="0" mi="0" ci="1"/>',
            "huge line number": b'<line nr="123456789012" mi="0" ci="1"/>',
        },
    ),
    Case("sourcefile inside a sourcefile", jac(b'<sourcefile name="B.java"/>'), line=4),
    Case("sourcefile without name", jac(b"", sourcefile=b"<sourcefile>"), line=3),
    Case(
        "sourcefile outside a package",
        b'<report name="r"><sourcefile name="A.java"></sourcefile></report>',
        line=1,
    ),
    Case("mismatched tags", JAC_HEAD + b"<sourcefile name='A.java'></package></report>"),
    Case("non-UTF-8 bytes", jac(b'<line nr="1" mi="0" ci="1"/><!-- \xc3\x28 -->')),
    Case("binary garbage after the root", GOOD_JAC + b"\xde\xad\xbe\xef"),
    Case("undefined entity", jac(b"&nope;")),
    *entity_attacks(b"report"),
    Case("deep nesting", b"<report>" + b"<group>" * 50_000 + b"</group>" * 50_000 + b"</report>"),
]

GOOD_LCOV = b"TN:\nSF:src/a.c\nFN:1,main\nFNDA:1,main\nDA:1,1\nDA:2,0\nLF:2\nLH:1\nend_of_record\n"
LCOV = [
    Case("empty", b"", UnknownFormat),
    Case("truncated (no end_of_record)", GOOD_LCOV[: GOOD_LCOV.index(b"LF:")], line=7),
    Case("only a test name", b"TN:unit\n"),
    Case("DA before SF", b"TN:\nDA:1,1\nend_of_record\n", line=2),
    Case("every DA record unreadable", b"SF:a.c\nDA:0,skipped\nDA:x,1\nend_of_record\n"),
    Case("non-UTF-8 path", GOOD_LCOV.replace(b"src/a.c", b"src/\xff.c"), line=2),
    Case("SF inside a section", GOOD_LCOV.replace(b"DA:1,1", b"SF:b.c\nDA:1,1"), line=5),
    Case("end_of_record without SF", b"TN:\nend_of_record\n", line=2),
    Case("binary garbage in a section", GOOD_LCOV.replace(b"LH:1", b"\x00\x01\x02\xff"), line=8),
    Case("binary garbage", b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)), UnknownFormat),
]

GOOD_GO = b"mode: count\nexample.com/m/a.go:3.10,5.2 2 1\nexample.com/m/a.go:5.2,6.3 1 0\n"
GO = [
    Case("empty", b"", UnknownFormat),
    Case("no mode line", GOOD_GO.split(b"\n", 1)[1], line=1),
    Case("unknown mode", b"mode: sometimes\na.go:1.1,2.2 1 1\n", line=1),
    Case("mixed modes", GOOD_GO + b"mode: set\na.go:1.1,1.5 1 1\n", line=4),
    *on_line(
        2,
        lambda block: GOOD_GO.replace(b"3.10,5.2 2 1", block),
        {
            "count not a number": b"3.10,5.2 2 x",
            "statements not a number": b"3.10,5.2 two 1",
            "negative count": b"3.10,5.2 2 -1",
            "bad position": b"3.10-5.2 2 1",
            "block ending before it starts": b"9.10,5.2 2 1",
            "missing fields": b"3.10,5.2 1",
        },
    ),
    *on_line(
        2,
        lambda block: b"mode: set\n" + block + b"\n",
        {
            "huge block span": b"a.go:1.1,1000000000.2 1 1",
            "no file name": b":1.1,2.2 1 1",
            "non-UTF-8 file name": b"\xff\xfe.go:1.1,2.2 1 1",
            "binary garbage after mode": b"\x00\x01\x02\x03",
        },
    ),
    Case("not a block at all", GOOD_GO + b"hello world\n", line=4),
]

GOOD_JSON = (
    b'{"meta": {"format": 3}, "files": {"a.py": {"executed_lines": [1], "missing_lines": [2]}}}'
)
COVERAGE_JSON = [
    Case("an object of no known keys", b'{"x": 1}', UnknownFormat),
    Case("truncated", GOOD_JSON[:-10]),
    Case("no file in files", b'{"meta": {"format": 3}, "files": {}}'),
    Case("files not an object", b'{"meta": {"version": "7"}, "files": [1, 2]}', UnknownFormat),
    Case("file not an object", b'{"meta": {"version": "7"}, "files": {"a.py": 3}}'),
    Case("lines not a list", GOOD_JSON.replace(b"[1]", b"1")),
    Case("line not a number", GOOD_JSON.replace(b"[1]", b'["1"]')),
    Case("line a boolean", GOOD_JSON.replace(b"[1]", b"[true]")),
    Case("negative line", GOOD_JSON.replace(b"[1]", b"[-4]")),
    Case("huge line number", GOOD_JSON.replace(b"[1]", b"[123456789012]")),
    Case("fractional line", GOOD_JSON.replace(b"[1]", b"[1.5]")),
    Case("bad arc", GOOD_JSON.replace(b'"missing_lines"', b'"executed_branches": [[1]], "x"')),
    Case("no files", b'{"meta": {"format": 3}, "totals": {}}', UnknownFormat),
    Case("meta not an object", b'{"meta": 3, "files": {}}', UnknownFormat),
    Case("non-UTF-8 bytes", GOOD_JSON.replace(b"a.py", b"\xff.py")),
    Case("trailing garbage", GOOD_JSON + b"\n{}"),
    Case(
        "deep nesting",
        b'{"meta": {"format": 3}, "files": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        UnknownFormat,
    ),
    Case(
        "deep nesting in a file",
        b'{"meta": {"format": 3}, "files": {"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}}",
    ),
    Case("binary garbage", b"{\x00\x01\x02", UnknownFormat),
]

MATRIX = {
    "Cobertura XML": COBERTURA,
    "JaCoCo XML": JACOCO,
    "LCOV": LCOV,
    "Go coverprofile": GO,
    "coverage.py JSON": COVERAGE_JSON,
}


def test_the_matrix_has_enough_cases_per_format() -> None:
    sizes = {fmt: len(cases) for fmt, cases in MATRIX.items()}
    assert sizes["Cobertura XML"] >= 20 and sizes["JaCoCo XML"] >= 20
    assert min(sizes["LCOV"], sizes["Go coverprofile"], sizes["coverage.py JSON"]) >= 10


@pytest.mark.parametrize(
    ("fmt", "case"), [(fmt, case) for fmt, cases in MATRIX.items() for case in cases], ids=str
)
def test_a_malformed_report_gets_a_readable_error(fmt: str, case: Case) -> None:
    with pytest.raises(ReportError) as caught:
        parse_report(case.raw)
    error = caught.value
    assert type(error) is case.error, f"{type(error).__name__}: {error}"
    message = str(error)
    # short: a reason, and at most the list of the formats tried
    assert 10 < len(message) < 200 + len(tried()) and "Traceback" not in message
    if isinstance(error, MalformedReport):
        assert error.fmt == fmt
        assert message.startswith(f"malformed {fmt} report")
        if case.line is not None:
            assert error.line == case.line, message


@pytest.mark.parametrize(
    "raw", [GOOD_COB, GOOD_JAC, GOOD_LCOV, GOOD_GO, GOOD_JSON], ids=lambda r: r[:12].decode()
)
def test_the_matrix_base_documents_are_themselves_valid(raw: bytes) -> None:
    assert parse_report(raw).totals().lines >= 1


def test_an_entity_bomb_is_refused_before_anything_is_expanded() -> None:
    with pytest.raises(MalformedReport, match="entity declarations are not allowed"):
        parse_report(billion_laughs(b"coverage"))


def test_limits_do_not_let_a_huge_report_through() -> None:
    with pytest.raises(ReportTooLarge):
        parse_report(GOOD_COB, limits=ParseLimits(max_bytes=len(GOOD_COB) - 1))
