"""Visual Studio coverage XML, ``<results>`` and ``<CoverageDSPriv>``:
hand-written input, expected lines stated beside it and checked against the
module's own ``lines_covered`` / ``lines_partially_covered`` /
``lines_not_covered`` (Visual Studio does not run here)."""

from __future__ import annotations

import pytest

from app.coverage import detect_format, parse_report
from app.coverage.detect import VISUAL_STUDIO
from app.errors import UnknownFormat

pytestmark = pytest.mark.timeout(60)

RESULTS = b"""<?xml version="1.0" encoding="utf-8"?>
<results>
  <modules>
    <module name="calc.dll" path="calc.dll" id="A1" block_coverage="60.00" line_coverage="57.14"
        blocks_covered="6" blocks_not_covered="4" lines_covered="4" lines_partially_covered="2"
        lines_not_covered="2">
      <functions>
        <function id="1" name="Add" type_name="Calc">
          <ranges>
            <range source_id="0" covered="yes" start_line="10"
                start_column="9" end_line="12" end_column="10"/>
            <range source_id="0" covered="partial" start_line="14"
                start_column="9" end_line="14" end_column="40"/>
          </ranges>
        </function>
        <function id="2" name="Sign" type_name="Calc">
          <ranges>
            <range source_id="0" covered="yes" start_line="20"
                start_column="9" end_line="20" end_column="20"/>
            <range source_id="0" covered="no" start_line="20"
                start_column="22" end_line="20" end_column="40"/>
            <range source_id="1" covered="no" start_line="5"
                start_column="9" end_line="6" end_column="10"/>
            <range source_id="1" covered="yes" start_line="7"
                start_column="9" end_line="7" end_column="10"/>
          </ranges>
        </function>
      </functions>
      <source_files>
        <source_file id="0" path="C:\\src\\Calc\\Calc.cs" checksum_type="SHA256" checksum="00"/>
        <source_file id="1" path="C:\\src\\Calc\\Sign.cs" checksum_type="SHA256" checksum="00"/>
      </source_files>
    </module>
  </modules>
</results>"""

DSPRIV = b"""<?xml version="1.0" standalone="yes"?>
<CoverageDSPriv>
  <Lines><LnStart>8</LnStart><ColStart>0</ColStart><LnEnd>9</LnEnd><ColEnd>0</ColEnd>
    <Coverage>0</Coverage><SourceFileID>3</SourceFileID><LineID>0</LineID></Lines>
  <Lines><LnStart>11</LnStart><ColStart>0</ColStart><LnEnd>11</LnEnd><ColEnd>0</ColEnd>
    <Coverage>1</Coverage><SourceFileID>3</SourceFileID><LineID>1</LineID></Lines>
  <Lines><LnStart>13</LnStart><ColStart>0</ColStart><LnEnd>13</LnEnd><ColEnd>0</ColEnd>
    <Coverage>2</Coverage><SourceFileID>3</SourceFileID><LineID>2</LineID></Lines>
  <Lines><LnStart>x</LnStart><LnEnd>1</LnEnd><Coverage>2</Coverage>
    <SourceFileID>3</SourceFileID></Lines>
  <SourceFileNames><SourceFileID>3</SourceFileID>
    <SourceFileName>C:\\src\\Calc\\Old.cs</SourceFileName></SourceFileNames>
</CoverageDSPriv>"""


def test_results_ranges_mark_every_line_and_partial_lines_as_visual_studio_counts_them() -> None:
    report = parse_report(RESULTS)
    assert detect_format(RESULTS) == VISUAL_STUDIO
    calc = report.files["C:/src/Calc/Calc.cs"]
    sign = report.files["C:/src/Calc/Sign.cs"]
    # 10..12 ran; 14 partly; 20: one range ran, one not, so partly; Sign.cs 5..6 not, 7 ran
    assert calc.lines == {10: 1, 11: 1, 12: 1, 14: 1, 20: 1}
    assert sign.lines == {5: 0, 6: 0, 7: 1}
    assert set(calc.branches) == {14, 20} and not sign.branches
    totals = report.totals()
    # the module's own lines_covered="4" lines_partially_covered="2" lines_not_covered="2"
    assert (totals.hits, totals.partials, totals.misses) == (4, 2, 2)


def test_the_older_coveragexml_export_is_read_too() -> None:
    report = parse_report(DSPRIV)
    assert detect_format(DSPRIV) == VISUAL_STUDIO
    old = report.files["C:/src/Calc/Old.cs"]
    assert old.lines == {8: 1, 9: 1, 11: 1, 13: 0}  # 0 covered, 1 partly, 2 not covered
    assert set(old.branches) == {11}
    assert report.skipped.count == 1 and 'LnStart="x"' in report.skipped.summary()


def test_a_range_naming_no_source_file_is_skipped_and_another_results_root_refused() -> None:
    raw = RESULTS.replace(b'<source_file id="1"', b'<source_file id="9"')
    report = parse_report(raw)
    assert "C:/src/Calc/Sign.cs" not in report.files
    assert report.skipped.count == 3 and "names no file" in report.skipped.summary()  # its lines
    with pytest.raises(UnknownFormat):
        detect_format(b"<results><test name='a' outcome='passed'/></results>")
