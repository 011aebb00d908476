"""The XML parser reads every report as UTF-8, whatever it declares.

A declared encoding in which ``<!ENTITY`` is spelled differently (UTF-7)
used to slip entity declarations past the refusal; now the declaration
does not change how the bytes are read.
"""

from __future__ import annotations

import pytest

from app.coverage import ParseLimits
from app.coverage.formats import cobertura, jacoco
from app.errors import MalformedReport

pytestmark = pytest.mark.timeout(20)

LIMITS = ParseLimits(max_bytes=10_000_000)
GOOD = (
    '<?xml version="1.0" encoding="{encoding}"?>\n<coverage version="7"><packages>'
    '<package name="p"><classes><class name="a" filename="a.py"><lines>'
    '<line number="1" hits="1"/><line number="2" hits="0"/>'
    "</lines></class></classes></package></packages></coverage>\n"
)


def utf7_laughs() -> bytes:
    """A billion laughs whose declarations are UTF-7 (``+ADw-`` is ``<``)."""
    entities = '+ADw-!ENTITY lol0 "lol"+AD4-'
    for i in range(1, 10):
        entities += f'+ADw-!ENTITY lol{i} "{f"&lol{i - 1};" * 10}"+AD4-'
    return (
        '<?xml version="1.0" encoding="UTF-7"?>\n'
        f'<!DOCTYPE coverage [{entities}]><coverage version="&lol9;"><packages/></coverage>'
    ).encode()


def test_a_utf7_entity_bomb_is_never_expanded() -> None:
    with pytest.raises(MalformedReport):
        cobertura.parse(utf7_laughs(), LIMITS)


def test_a_declared_non_utf_encoding_does_not_change_how_the_bytes_are_read() -> None:
    # Read as UTF-8, the UTF-7 shift sequences are text in an attribute, not markup.
    raw = GOOD.format(encoding="UTF-7").replace('name="p"', 'name="+ADw-p+AD4-"').encode()
    report = cobertura.parse(raw, LIMITS)
    assert report.totals().lines == 2


def test_latin1_bytes_under_a_latin1_declaration_are_malformed_utf8() -> None:
    raw = GOOD.format(encoding="ISO-8859-1").replace("a.py", "\u00e9.py").encode("latin-1")
    with pytest.raises(MalformedReport, match="the report is not UTF-8"):
        cobertura.parse(raw, LIMITS)


@pytest.mark.parametrize("codec, name", [("utf-16", "UTF-16"), ("utf-32", "UTF-32")])
def test_a_utf16_or_utf32_report_is_refused_naming_its_encoding(codec: str, name: str) -> None:
    raw = GOOD.format(encoding=name).encode(codec)  # Python writes the byte order mark
    with pytest.raises(MalformedReport, match=f"the XML is {name}: covworker reads UTF-8"):
        cobertura.parse(raw, LIMITS)


def test_a_utf8_byte_order_mark_and_an_external_doctype_are_read() -> None:
    raw = b"\xef\xbb\xbf" + GOOD.format(encoding="UTF-8").encode()
    assert cobertura.parse(raw, LIMITS).totals().lines == 2
    jacoco_report = (
        b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        b'<!DOCTYPE report PUBLIC "-//JACOCO//DTD Report 1.1//EN" "report.dtd">'
        b'<report name="r"><package name="p"><sourcefile name="A.java">'
        b'<line nr="1" mi="0" ci="1" mb="0" cb="0"/></sourcefile></package></report>'
    )
    assert jacoco.parse(jacoco_report, LIMITS).totals().lines == 1
