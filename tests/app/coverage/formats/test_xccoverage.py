"""Xcode's xccoverage archive: Xcode does not run here, so the archives are
written by hand in the shape ``plutil -convert xml1`` gives an
``Action.xccoverage`` (an NSKeyedArchiver plist), and as a binary plist,
with the lines each means stated beside it."""

from __future__ import annotations

import plistlib
from typing import Any

import pytest

from app.coverage import parse_report
from app.coverage.detect import XCCOVERAGE, detect_format
from app.coverage.formats.xccoverage import _plutil_objects
from app.errors import MalformedReport, UnknownFormat
from tests.support.writers_a import xccoverage

pytestmark = pytest.mark.timeout(60)

RUN = {
    "/w/Calc/Ops.swift": {2: (3, None), 3: (0, None), 5: (1, None)},  # 1 and 4 not code
    "/w/Calc/Main.swift": {1: (1, None)},
}


@pytest.mark.parametrize("binary", [False, True])
def test_each_executable_line_has_its_count_and_the_others_are_not_code(binary: bool) -> None:
    raw = xccoverage(RUN, binary=binary)
    assert detect_format(raw) == XCCOVERAGE
    files = parse_report(raw, roots=["/w"]).files
    assert files["Calc/Ops.swift"].lines == {2: 3, 3: 0, 5: 1}
    assert files["Calc/Main.swift"].lines == {1: 1}


def _compact(obj: Any) -> Any:
    """A plistlib object as the plutil reader keeps it: a line object as its
    count and ``x`` (bytes), an array's references as indices."""
    if isinstance(obj, dict) and obj.keys() == {"$class", "c", "s", "x"}:
        return (str(obj["c"]).encode(), b"true" if obj["x"] else b"false")
    if isinstance(obj, dict) and "NS.objects" in obj:
        return obj | {"NS.objects": tuple(ref["CF$UID"] for ref in obj["NS.objects"])}
    return obj


def test_an_archive_in_plutils_shape_is_read_as_plistlib_reads_it() -> None:
    """The regular-expression reading of plutil's XML gives plistlib's
    objects; a path with an entity, or any other shape, goes to plistlib."""
    raw = xccoverage(RUN)
    objects = plistlib.loads(raw)["$objects"]
    assert sum(isinstance(o, dict) and "x" in o for o in objects) == 6  # Ops 1-5, Main 1
    assert _plutil_objects(raw) == [_compact(o) for o in objects]
    amp = xccoverage({"/w/R&D/a.swift": {1: (2, None)}})
    assert _plutil_objects(amp) is None
    assert parse_report(amp, roots=["/w"]).files["R&D/a.swift"].lines == {1: 2}
    spaced = raw.replace(b"<integer>3</integer>", b"<integer> 3 </integer>")
    assert _plutil_objects(spaced) is None
    assert parse_report(spaced, roots=["/w"]).files["Calc/Ops.swift"].lines[2] == 3


def archive(raw: bytes) -> dict:  # type: ignore[type-arg]
    doc: dict = plistlib.loads(raw)  # type: ignore[type-arg]
    return doc


def test_a_line_object_inside_another_object_sends_the_archive_to_plistlib() -> None:
    """The reader splits the archive at every line object: one nested in
    another object is not in plutil's shape, so plistlib reads the archive,
    and the nested one is no line of any file."""
    doc = plistlib.loads(xccoverage(RUN))
    line = next(o for o in doc["$objects"] if isinstance(o, dict) and "x" in o)
    doc["$objects"].append({"nested": dict(line)})
    raw = plistlib.dumps(doc, fmt=plistlib.FMT_XML)
    assert _plutil_objects(raw) is None
    files = parse_report(raw, roots=["/w"]).files
    assert files["Calc/Ops.swift"].lines == {2: 3, 3: 0, 5: 1}
    assert files["Calc/Main.swift"].lines == {1: 1}


def test_subranges_are_parts_of_the_line_not_branches() -> None:
    doc = archive(xccoverage(RUN))
    objects = doc["$objects"]
    line = next(o for o in objects if isinstance(o, dict) and o.get("c") == 3)
    objects.append({"c": 4, "len": 6, "x": 0})
    objects.append({"NS.objects": [{"CF$UID": len(objects) - 1}]})
    line["s"] = {"CF$UID": len(objects) - 1}
    fc = parse_report(plistlib.dumps(doc), roots=["/w"]).files["Calc/Ops.swift"]
    assert fc.lines[2] == 3 and not fc.branches


def test_a_bad_line_is_skipped_and_named_and_the_rest_is_kept() -> None:
    doc = archive(xccoverage(RUN))
    line = next(o for o in doc["$objects"] if isinstance(o, dict) and o.get("c") == 3)
    line["c"] = "three"
    report = parse_report(plistlib.dumps(doc), roots=["/w"])
    assert report.files["Calc/Ops.swift"].lines == {3: 0, 5: 1}
    assert (
        report.skipped.summary()
        == "1 record skipped: `line 2: x=True c='three'` at /w/Calc/Ops.swift"
    )


def test_a_plist_that_is_no_coverage_archive_is_refused() -> None:
    plain = plistlib.dumps({"$archiver": "NSKeyedArchiver", "$objects": ["$null", {"a": 1}]})
    with pytest.raises(UnknownFormat, match="<plist>"):
        detect_format(plain)
    with pytest.raises(UnknownFormat, match="binary plist"):
        detect_format(plistlib.dumps({"a": 1}, fmt=plistlib.FMT_BINARY))
    with pytest.raises(MalformedReport, match="no target with sourceFiles"):
        parse_report(plain, fmt=XCCOVERAGE)


def test_a_utf16_xml_plist_is_refused_naming_its_encoding_as_every_xml_report_is() -> None:
    raw = xccoverage(RUN).decode("utf-8").encode("utf-16")  # with its byte order mark
    with pytest.raises(MalformedReport, match="UTF-16"):
        parse_report(raw, fmt=XCCOVERAGE)
