"""OpenCover XML (.NET). dotnet cannot run on this machine, so the report is
written here in the shape OpenCover and coverlet (``--format opencover``)
document; its expected figures are counted by hand below.
"""

from __future__ import annotations

import pytest

from app.coverage import parse_report
from app.coverage.detect import OPENCOVER, detect_format
from app.coverage.limits import ParseLimits
from app.errors import ReportTooLarge
from tests.app.coverage.formats.conftest import refused

pytestmark = pytest.mark.timeout(60)

SESSION = b"""<?xml version="1.0" encoding="utf-8"?>
<CoverageSession>
  <Summary numSequencePoints="6" visitedSequencePoints="4" numBranchPoints="4"
           visitedBranchPoints="2"/>
  <Modules>
    <Module hash="A1">
      <ModulePath>Calc.dll</ModulePath>
      <Files>
        <File uid="1" fullPath="C:\\build\\src\\Calc.cs"/>
        <File uid="2" fullPath="C:\\build\\src\\Program.cs"/>
      </Files>
      <Classes><Class><FullName>Calc</FullName><Methods>
        <Method><Name>System.String Calc::Classify(System.Int32)</Name><FileRef uid="1"/>
          <SequencePoints>
            <SequencePoint vc="3" uspid="1" ordinal="0" sl="5" sc="9" el="5" ec="20" fileid="1"/>
            <SequencePoint vc="1" uspid="2" ordinal="1" sl="6" sc="13" el="6" ec="30" fileid="1"/>
            <SequencePoint vc="2" uspid="3" ordinal="2" sl="6" sc="31" el="6" ec="40" fileid="1"/>
            <SequencePoint vc="0" uspid="4" ordinal="3" sl="8" sc="13" el="8" ec="30" fileid="1"/>
          </SequencePoints>
          <BranchPoints>
            <BranchPoint vc="1" uspid="5" ordinal="0" path="0" offset="7" offsetend="9" sl="5"
                         fileid="1"/>
            <BranchPoint vc="0" uspid="6" ordinal="1" path="1" offset="7" offsetend="14" sl="5"
                         fileid="1"/>
          </BranchPoints>
        </Method>
        <Method><Name>System.Void Program::Main()</Name><FileRef uid="2"/>
          <SequencePoints>
            <SequencePoint vc="1" uspid="7" ordinal="0" sl="3" sc="1" el="3" ec="2"/>
            <SequencePoint vc="1" uspid="8" ordinal="1" sl="16707566" sc="1" el="16707566" ec="2"
                           fileid="2"/>
          </SequencePoints>
          <BranchPoints>
            <BranchPoint vc="2" uspid="9" ordinal="0" path="0" offset="3" offsetend="5" sl="3"
                         fileid="2"/>
            <BranchPoint vc="0" uspid="10" ordinal="1" path="1" offset="3" offsetend="8" sl="3"
                         fileid="2"/>
          </BranchPoints>
        </Method>
      </Methods></Class></Classes>
    </Module>
    <Module hash="B2" skippedDueTo="Filter">
      <ModulePath>xunit.dll</ModulePath>
    </Module>
  </Modules>
</CoverageSession>
"""


def test_opencover_is_detected_and_read_by_start_line_with_branch_identities() -> None:
    assert detect_format(SESSION) == OPENCOVER
    report = parse_report(SESSION, roots=["C:\\build"])
    assert set(report.files) == {"src/Calc.cs", "src/Program.cs"}
    calc = report.files["src/Calc.cs"]
    assert calc.lines == {5: 3, 6: 2, 8: 0}  # line 6: the larger of its two statements
    assert calc.branches[5].covered_ids == frozenset({"oc:7,9,0"})
    assert calc.branches[5].all_ids == frozenset({"oc:7,9,0", "oc:7,14,1"})
    # a point without fileid belongs to its method's file; 0xFEEFEE is a hidden line
    program = report.files["src/Program.cs"]
    assert program.lines == {3: 1}
    t = report.totals()
    assert (t.lines, t.hits, t.misses, t.partials) == (4, 1, 1, 2)


def test_two_opencover_runs_merge_their_branch_points_by_identity() -> None:
    other = SESSION.replace(b'vc="1" uspid="5"', b'vc="0" uspid="5"').replace(
        b'vc="0" uspid="6"', b'vc="4" uspid="6"'
    )
    merged = parse_report(SESSION)
    merged.merge(parse_report(other))
    br = merged.files["C:/build/src/Calc.cs"].branches[5]
    assert (br.covered, br.total) == (2, 2)


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (SESSION.replace(b'vc="0" uspid="4"', b'vc="-1" uspid="4"'), "negative visit count"),
        (SESSION.replace(b'sl="8"', b'sl="x"'), "start line (sl) 'x' is not a whole number"),
        (SESSION.replace(b'fileid="1"/>\n          </Seq', b'fileid="9"/>\n          </Seq'),
         "fileid '9'"),
        (SESSION.replace(b'<File uid="2" fullPath=', b'<File uid="2" path='), "without a uid"),
        (SESSION.replace(b"</Modules>", b""), "not well-formed"),
    ],
)  # fmt: skip
def test_a_broken_opencover_report_names_the_format_the_problem_and_the_line(
    raw: bytes, reason: str
) -> None:
    assert refused(raw, "OpenCover XML", reason).line is not None


def test_a_sequence_point_spanning_lines_marks_every_line_it_spans() -> None:
    """``sl=3 el=5`` is one statement over lines 3 to 5: each is a line with
    its visits, as Codecov and ReportGenerator mark them; where two points
    share a line the larger count wins."""
    spans = SESSION.replace(
        b'<SequencePoint vc="0" uspid="4" ordinal="3" sl="8" sc="13" el="8" ec="30" fileid="1"/>',
        b'<SequencePoint vc="0" uspid="4" ordinal="3" sl="8" sc="13" el="10" ec="30" fileid="1"/>'
        b'<SequencePoint vc="4" uspid="11" ordinal="4" sl="10" sc="1" el="11" ec="2" fileid="1"/>'
        b'<SequencePoint vc="1" uspid="12" ordinal="5" sl="12" sc="1" el="7" ec="2" fileid="1"/>',
    )
    calc = parse_report(spans, roots=["C:\\build"]).files["src/Calc.cs"]
    # 8-10 from the first span, 10-11 from the second (10: the larger, 4); an
    # end line before the start line is the start line alone
    assert calc.lines == {5: 3, 6: 2, 8: 0, 9: 0, 10: 4, 11: 4, 12: 1}


def test_a_sequence_point_spanning_more_lines_than_the_limit_stops_early() -> None:
    huge = SESSION.replace(b'sl="8" sc="13" el="8"', b'sl="8" sc="13" el="9000000"')
    with pytest.raises(ReportTooLarge, match="more than 1000 line records"):
        parse_report(huge, limits=ParseLimits(max_lines=1000))
