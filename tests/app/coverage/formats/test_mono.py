"""Mono (monocov) coverage XML: hand-written input, expected lines stated
beside it (monocov does not run here), and its ``<coverage>`` root told
apart from Cobertura's and Clover's."""

from __future__ import annotations

import pytest

from app.coverage import detect_format, parse_report
from app.coverage.detect import CLOVER, COBERTURA, MONO

pytestmark = pytest.mark.timeout(60)

MONO_XML = b"""<?xml version="1.0" encoding="utf-8"?>
<coverage version="0.3">
  <assembly name="Calc" guid="5d1b" filename="Calc.dll"/>
  <class name="Calc.Core" assembly="Calc">
    <method name="Add" class="Calc.Core" token="100663297" filename="/src/Calc/Core.cs">
      <statement line="12" column="9" counter="3"/>
      <statement line="13" column="9" counter="0"/>
      <statement line="13" column="20" counter="2"/>
    </method>
    <method name="Div" class="Calc.Core" token="100663298" filename="/src/Calc/Core.cs">
      <statement line="20" column="9" counter="0"/>
      <statement line="21" column="9" counter="x"/>
    </method>
    <method name="Gen" class="Calc.Core" token="100663299">
      <statement line="30" column="9" counter="1"/>
    </method>
  </class>
</coverage>"""


def test_each_statement_counts_on_its_line_in_its_methods_file() -> None:
    report = parse_report(MONO_XML)
    assert detect_format(MONO_XML) == MONO
    # 13: two statements, 0 and 2: the largest; 21's counter unreadable; Gen names no file
    assert report.files["/src/Calc/Core.cs"].lines == {12: 3, 13: 2, 20: 0}
    assert report.skipped.count == 2


@pytest.mark.parametrize(
    ("raw", "fmt"),
    [
        (b'<coverage line-rate="1"><sources/><packages><package name="assembly"/>'
         b"</packages></coverage>", COBERTURA),
        (b'<coverage generated="1"><project name="p"><file name="assembly.php"/>'
         b"</project></coverage>", CLOVER),
        (b'<coverage version="0.3"><assembly name="A"/></coverage>', MONO),
    ],
)  # fmt: skip
def test_a_coverage_root_is_mono_only_with_an_assembly_before_cobertura_or_clover_elements(
    raw: bytes, fmt: str
) -> None:
    assert detect_format(raw) == fmt
