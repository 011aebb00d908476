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

import pytest

from app.coverage import parse_report
from app.coverage.detect import SCOVERAGE, detect_format
from app.errors import MalformedReport

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
