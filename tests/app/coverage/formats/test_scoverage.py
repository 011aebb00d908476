"""scoverage XML: no Scala compiler with the scoverage plugin runs here, so
both shapes (sbt-scoverage's ``scoverage.xml`` and the older statement file)
are written by hand for one program, the lines and branches each means
stated beside it:

    line 3: def sign(x: Int) = if (x > 0) 1     -- `if` (3 runs), arm `1` (2 runs, a branch)
    line 4:   else if (x < 0) -1                -- arm `-1` (never, a branch); else-if (1 run)
    line 5:   else 0                            -- arm `0` (1 run, a branch)
    line 7: def never() = ???                   -- never run
    line 9: generated code, ignored
"""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from app.coverage import parse_report
from app.coverage.detect import SCOVERAGE, detect_format
from app.coverage.formats import scoverage
from app.coverage.limits import ParseLimits
from app.coverage.model import Branches, FileCoverage, Report
from app.coverage.safexml import feed
from app.errors import MalformedReport, ReportError
from tests.support.writers import WRITERS, as_run

pytestmark = pytest.mark.timeout(60)

SRC = "/w/src/main/scala/calc/Ops.scala"
# (line, start offset, branch, invocation count, ignored)
STATEMENTS = [
    (3, 40, False, 3, False),
    (3, 52, True, 2, False),
    (4, 70, True, 0, False),
    (4, 60, False, 1, False),
    (5, 90, True, 1, False),
    (7, 120, False, 0, False),
    (9, 150, False, 4, True),
]


def scoverage_xml(statements: list[tuple[int, int, bool, int, bool]] = STATEMENTS) -> bytes:
    rows = "\n".join(
        f'<statement package="calc" class="Ops" class-type="Object" full-class-name="calc.Ops" '
        f'source="{SRC}" method="sign" start="{start}" end="{start + 5}" line="{ln}" '
        f'symbol="scala.Int" tree="Literal" branch="{str(br).lower()}" '
        f'invocation-count="{n}" ignored="{str(ig).lower()}"></statement>'
        for ln, start, br, n, ig in statements
    )
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n<scoverage statement-count="6" '
        'statements-invoked="4" statement-rate="66.67" branch-rate="66.67" version="1.0" '
        'timestamp="1700000000000"><packages><package name="calc"><classes>'
        '<class name="calc.Ops" filename="calc/Ops.scala"><methods><method name="calc/Ops/sign">'
        f"<statements>\n{rows}\n</statements></method></methods></class></classes></package>"
        "</packages></scoverage>\n"
    ).encode()


def older_xml(statements: list[tuple[int, int, bool, int, bool]] = STATEMENTS) -> bytes:
    rows = "\n".join(
        f"<statement><source>{SRC}</source><package>calc</package><class>Ops</class>"
        f"<method>sign</method><id>{i}</id><start>{start}</start><end>{start + 5}</end>"
        f"<line>{ln}</line><description>x</description><branch>{str(br).lower()}</branch>"
        f"<count>{n}</count><ignored>{str(ig).lower()}</ignored></statement>"
        for i, (ln, start, br, n, ig) in enumerate(statements)
    )
    return f'<?xml version="1.0" ?>\n<statements>\n{rows}\n</statements>\n'.encode()


@pytest.mark.parametrize("write", [scoverage_xml, older_xml])
def test_a_lines_hits_are_its_largest_statement_count_and_branch_statements_are_branches(
    write: object,
) -> None:
    raw = write()  # type: ignore[operator]
    assert detect_format(raw) == SCOVERAGE
    fc = parse_report(raw, roots=["/w"]).files["src/main/scala/calc/Ops.scala"]
    assert fc.lines == {3: 3, 4: 1, 5: 1, 7: 0}  # line 9 is ignored
    assert {ln: (b.covered, b.total) for ln, b in fc.branches.items()} == {
        3: (1, 1),
        4: (0, 1),
        5: (1, 1),
    }


@pytest.mark.parametrize("write", [scoverage_xml, older_xml])
def test_a_bad_statement_is_skipped_and_named_and_the_rest_is_kept(write: object) -> None:
    raw = write([*STATEMENTS, (0, 200, False, 1, False)])  # type: ignore[operator]
    report = parse_report(raw, roots=["/w"])
    assert report.files["src/main/scala/calc/Ops.scala"].lines == {3: 3, 4: 1, 5: 1, 7: 0}
    assert report.skipped.count == 1
    assert report.skipped.summary().startswith(
        "1 record skipped: `<statement> /src/main/scala/calc/Ops.scala line 0 count 1` at element"
    )


def test_a_report_of_only_bad_statements_is_refused() -> None:
    with pytest.raises(MalformedReport, match="no record could be read"):
        parse_report(older_xml([(0, 1, False, 1, False)]))


# The byte reader (``_read_plain``) against the callback path it stands in for.

LIMITS = ParseLimits()


def random_scoverage(seed: int) -> bytes:
    """A report of several sources (one written two ways, one met again after
    another, one only ignored), lines with several statements, branch and
    ignored statements, in sbt-scoverage's attribute order."""
    rnd = random.Random(seed)
    sources = ["/w/src/a/A.scala", "src/a/A.scala", "/w/src/b/B.scala", "/w/src/c/C.scala"]
    runs = [*rnd.sample(sources, 4), sources[2], "/w/src/only/Ignored.scala"]
    statements, start = [], 0
    for source in runs:
        for _ in range(rnd.randint(1, 40)):
            start += rnd.randint(1, 30)
            statements.append(
                (
                    source,
                    rnd.randint(1, 25),
                    start,
                    rnd.random() < 0.3,
                    rnd.choice((0, 0, 1, 2, 7, 40)),
                    rnd.random() < 0.1 or source.endswith("Ignored.scala"),
                )
            )
    rows = "\n".join(
        f'<statement package="p" class="C" source="{src}" method="m" start="{at}" '
        f'end="{at + 4}" line="{ln}" branch="{str(br).lower()}" invocation-count="{n}" '
        f'ignored="{str(ig).lower()}"></statement>'
        for src, ln, at, br, n, ig in statements
    )
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n<scoverage version="1.0"><packages>'
        '<package name="p"><classes><class name="C" filename="C.scala"><methods>'
        f'<method name="m"><statements>\n{rows}\n</statements></method></methods></class>'
        "</classes></package></packages></scoverage>\n"
    ).encode()


def callback_path(raw: bytes, limits: ParseLimits = LIMITS) -> Report:
    return feed(raw, scoverage._Statements(limits, ("/w",)), scoverage.FMT)


def in_order(report: Report) -> list[object]:
    """Files, lines and branches, each in the order the parser made them."""
    return [
        (path, list(fc.lines.items()), list(fc.branches.items()))
        for path, fc in report.files.items()
    ]


@pytest.mark.parametrize("seed", range(8))
def test_the_byte_reader_reads_what_the_callback_path_reads(seed: int) -> None:
    raw = random_scoverage(seed)
    plain = scoverage._read_plain(raw, LIMITS, ("/w",))
    assert plain is not None
    assert in_order(plain) == in_order(callback_path(raw))
    assert plain.skipped.count == 0


def many_files(lines: int, seed: int) -> Report:
    """About ``lines`` lines over files of 50 to 400, hits skewed to 0 and 1, a
    branch line in seven (the shape the throughput benchmark reads)."""
    rnd, report, made = random.Random(seed), Report(), 0
    while made < lines:
        fc = FileCoverage()
        for ln in range(1, rnd.randint(50, 400) + 1):
            fc.lines[ln] = rnd.choice((0, 0, 1, 1, 2, 5, 40))
            if rnd.random() < 0.15:
                fc.branches[ln] = Branches(rnd.randint(0, 2), 2)
        report.files[f"src/module{len(report.files) // 40}/file{len(report.files)}.scala"] = fc
        made += len(fc.lines)
    return report


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_byte_reader_reads_the_property_writers_report_as_the_callback_path(
    seed: int,
) -> None:
    raw = WRITERS["scoverage"](as_run(many_files(3000, seed=seed)))
    plain = scoverage._read_plain(raw, LIMITS, ("/w",))
    assert plain is not None
    assert in_order(plain) == in_order(callback_path(raw))


def _first_statement(raw: bytes, old: bytes, new: bytes) -> bytes:
    at = raw.index(b"<statement ")
    assert raw.find(old, at) != -1
    return raw[:at] + raw[at:].replace(old, new, 1)


FALLBACKS = {
    "a comment": lambda raw: raw.replace(b"<statements>", b"<statements><!-- x -->", 1),
    "an entity in a source": lambda raw: raw.replace(b"/w/src/b/B.scala", b"/w/src/b/B&amp;.scala"),
    "a single-quoted attribute": lambda raw: _first_statement(
        raw, b'ignored="false"', b"ignored='false'"
    ),
    "a double quote inside a single-quoted one": lambda raw: _first_statement(
        raw,
        b'method="m"',
        b'method=\'m" start="1" end="2" line="1" branch="false" '
        b'invocation-count="99" ignored="false">\'',
    ),
    "attributes in another order": lambda raw: _first_statement(raw, b' method="m"', b"").replace(
        b"<statement ", b'<statement method="m" ', 1
    ),
    "a statement without ignored": lambda raw: _first_statement(raw, b' ignored="false"', b""),
    "a processing instruction": lambda raw: raw.replace(b"<packages>", b"<?pi x?><packages>", 1),
    "a branch written True": lambda raw: _first_statement(raw, b'branch="', b'branch="True" x="'),
}


@pytest.mark.parametrize("change", FALLBACKS.values(), ids=FALLBACKS.keys())
def test_where_the_byte_reader_could_read_otherwise_the_callback_path_reads(
    change: Callable[[bytes], bytes],
) -> None:
    raw = change(random_scoverage(4))
    assert scoverage._read_plain(raw, LIMITS, ("/w",)) is None
    assert in_order(parse_report(raw, roots=["/w"])) == in_order(callback_path(raw))


def test_a_line_break_written_as_a_reference_in_a_branch_start_falls_back() -> None:
    raw = scoverage_xml().replace(b'start="52"', b'start="5&#10;2"')
    assert scoverage._read_plain(raw, LIMITS, ("/w",)) is None
    report = parse_report(raw, roots=["/w"])
    assert in_order(report) == in_order(callback_path(raw))
    # A reference is not normalised to a space as a written line break is.
    assert report.files["src/main/scala/calc/Ops.scala"].branches[3].all_ids == {"sc:5\n2"}


def test_more_statements_than_the_limit_are_refused_as_before() -> None:
    raw = random_scoverage(5)
    limits = ParseLimits(max_lines=raw.count(b"<statement ") - 1)
    assert scoverage._read_plain(raw, limits, ()) is None
    with pytest.raises(ReportError) as before:
        callback_path(raw, limits)
    with pytest.raises(ReportError) as now:
        parse_report(raw, limits=limits)
    assert str(now.value) == str(before.value)


def test_a_bad_statement_falls_back_and_is_skipped_and_named_as_before() -> None:
    raw = scoverage_xml([*STATEMENTS, (0, 200, False, 1, False)])
    assert scoverage._read_plain(raw, LIMITS, ("/w",)) is None
    report, before = parse_report(raw, roots=["/w"]), callback_path(raw)
    assert in_order(report) == in_order(before)
    assert report.skipped.summary() == before.skipped.summary()
