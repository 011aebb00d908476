"""dotCover's detailed XML: dotCover does not run here (Windows / .NET), so
the reports are written by hand in the shape of its DetailedXML report, with
the lines each statement means stated beside it."""

from __future__ import annotations

import pytest

from app.coverage import parse_report
from app.coverage.detect import DOTCOVER, detect_format
from app.errors import MalformedReport, UnknownFormat

pytestmark = pytest.mark.timeout(60)

REPORT = b"""<?xml version="1.0" encoding="utf-8"?>
<Root CoveredStatements="4" TotalStatements="6" CoveragePercent="67"
      ReportType="DetailedXml" DotCoverVersion="2023.3.2">
  <FileIndices>
    <File Index="1" Name="C:\\build\\src\\Calc\\Ops.cs" />
    <File Index="2" Name="C:\\build\\src\\Calc\\Main.cs" />
  </FileIndices>
  <Assembly Name="Calc" CoveredStatements="4" TotalStatements="6" CoveragePercent="67">
    <Namespace Name="Calc">
      <Type Name="Ops">
        <Method Name="Sign(int):int">
          <Statement FileIndex="1" Line="7" Column="9" EndLine="7" EndColumn="19" Covered="True" />
          <Statement FileIndex="1" Line="8" Column="13" EndLine="8" EndColumn="22" Covered="True" />
          <Statement FileIndex="1" Line="9" Column="9" EndLine="11"
                     EndColumn="10" Covered="False" />
          <Statement FileIndex="1" Line="11" Column="12" EndLine="11"
                     EndColumn="30" Covered="True" />
        </Method>
        <Type Name="Nested">
          <Method Name="Never():void">
            <Statement FileIndex="1" Line="20" Column="9" EndLine="20" EndColumn="20"
                       Covered="False" />
          </Method>
        </Type>
      </Type>
      <Type Name="Program">
        <Method Name="Main():void">
          <Statement FileIndex="2" Line="5" Column="9" EndLine="5" EndColumn="30" Covered="True" />
        </Method>
      </Type>
    </Namespace>
  </Assembly>
</Root>
"""


def test_each_statement_counts_on_every_line_it_spans_covered_if_any_statement_is() -> None:
    assert detect_format(REPORT) == DOTCOVER
    files = parse_report(REPORT, roots=["C:\\build"]).files
    # 9-11 span: 9 and 10 missed; 11 also holds a covered statement
    assert files["src/Calc/Ops.cs"].lines == {7: 1, 8: 1, 9: 0, 10: 0, 11: 1, 20: 0}
    assert files["src/Calc/Main.cs"].lines == {5: 1}


def test_a_bad_statement_is_skipped_and_named_and_the_rest_is_kept() -> None:
    raw = REPORT.replace(b'FileIndex="2" Line="5"', b'FileIndex="9" Line="5"').replace(
        b'Line="20" Column="9" EndLine="20" EndColumn="20"',
        b'Line="x" Column="9" EndLine="20" EndColumn="20"',
    )
    report = parse_report(raw, roots=["C:\\build"])
    assert report.files["src/Calc/Main.cs"].lines == {}  # its one statement names index 9
    assert 20 not in report.files["src/Calc/Ops.cs"].lines
    assert report.skipped.count == 2
    assert report.skipped.summary().startswith(
        '2 records skipped: `<Statement FileIndex="1" Line="x"'
    )


def test_a_root_element_without_dotcovers_marks_is_not_taken_for_dotcover() -> None:
    with pytest.raises(UnknownFormat, match="<Root>"):
        detect_format(b"<Root><Item/></Root>")


def test_a_file_without_a_name_is_refused_with_its_line() -> None:
    raw = REPORT.replace(
        b'<File Index="2" Name="C:\\build\\src\\Calc\\Main.cs" />', b'<File Index="2" />'
    )
    with pytest.raises(MalformedReport, match="without an Index or a Name") as caught:
        parse_report(raw)
    assert caught.value.line == 6
