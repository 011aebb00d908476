"""One payload -> one report (``parse_payload``): its files merged, paths
resolved by the network list, the uploader's fixes applied, a bad file
failing the whole upload by name. Checked on what comes out (report,
formats, warnings), not on how it is computed."""

from __future__ import annotations

from typing import Any

import pytest

from app.coverage import ParseLimits, codec
from app.errors import MalformedPayload, ReportError
from app.ingest.parse import parse_payload, payload_intermediate
from tests.app.ingest.conftest import (
    CALC,
    LIMIT,
    PAYLOADS,
    PKG_CHECKOUT,
    PKG_NETWORK,
    PKG_REPORTS,
    PY_REPORTS,
)
from tests.support.payloads import LCOV, packed, v1


def test_every_file_of_a_payload_is_parsed_and_merged_into_one_report() -> None:
    parsed = parse_payload(
        (PAYLOADS / "codecov-2.1.13-legacy.txt.gz").read_bytes(), ParseLimits(max_bytes=LIMIT)
    )
    assert sorted(parsed.formats) == ["cobertura", "lcov"]
    # LCOV's absolute paths resolved by the network; calc/__init__.py (a
    # docstring, no line) is not kept
    assert sorted(parsed.report.files) == [p for p in CALC if p != "calc/__init__.py"]
    assert parsed.warnings == []


def test_one_file_that_does_not_parse_fails_the_payload_naming_the_file() -> None:
    good = (PY_REPORTS / "run-sum.xml").read_bytes()
    body = v1(
        [
            {"filename": "good.xml", "format": "base64+compressed", "data": packed(good)},
            {
                "filename": "bad.info",
                "format": "base64+compressed",
                "data": packed(b"SF:a\nDA:x\n"),
            },
        ]
    )
    with pytest.raises(ReportError, match=r"coverage file bad\.info: malformed LCOV"):
        parse_payload(body, ParseLimits(max_bytes=LIMIT))


def test_report_fixes_drop_the_listed_lines_and_those_after_eof() -> None:
    lcov = b"SF:src/a.c\nDA:1,1\nDA:2,0\nDA:3,1\nDA:9,0\nend_of_record\n"
    body = v1(
        [{"filename": "lcov.info", "format": "base64+compressed", "data": packed(lcov)}],
        network_files=["src/a.c", ""],
        report_fixes={"format": "legacy", "value": {"src/a.c": {"eof": 5, "lines": [2]}}},
    )
    parsed = parse_payload(body, ParseLimits(max_bytes=LIMIT))
    assert parsed.report.files["src/a.c"].lines == {1: 1, 3: 1}


def test_files_of_several_formats_merge_line_by_line_and_are_named_in_order() -> None:
    cobertura = (
        b'<?xml version="1.0" ?><coverage version="7"><packages><package name="src">'
        b'<classes><class name="a.py" filename="src/a.py"><lines>'
        b'<line number="1" hits="1"/><line number="2" hits="0"/>'
        b"</lines></class></classes></package></packages></coverage>"
    )
    lcov = b"SF:src/a.py\nDA:2,3\nDA:4,0\nend_of_record\nSF:src/b.py\nDA:1,1\nend_of_record\n"
    body = v1(
        [
            {"filename": "cov.xml", "format": "base64+compressed", "data": packed(cobertura)},
            {"filename": "lcov.info", "format": "base64+compressed", "data": packed(lcov)},
        ]
    )
    parsed = parse_payload(body, ParseLimits(max_bytes=LIMIT))
    assert parsed.formats == ["cobertura", "lcov"]
    assert parsed.names == ["cov.xml", "lcov.info"]
    assert sorted(parsed.report.files) == ["src/a.py", "src/b.py"]
    assert parsed.report.files["src/a.py"].lines == {1: 1, 2: 3, 4: 0}


def test_what_a_parser_forgave_and_paths_outside_the_network_are_warnings_naming_them() -> None:
    lcov = b"SF:src/a.c\nDA:1,-1\nDA:2,1\nend_of_record\nSF:lib/x.c\nDA:1,1\nend_of_record\n"
    body = v1(
        [{"filename": "l.info", "format": "base64+compressed", "data": packed(lcov)}],
        network_files=["src/a.c", ""],
    )
    parsed = parse_payload(body, ParseLimits(max_bytes=LIMIT))
    assert parsed.warnings[0].startswith("coverage file l.info: LCOV: 1 negative counts")
    assert parsed.warnings[1:] == ["path not in the repository's file list, kept as is: lib/x.c"]
    assert parsed.report.files["src/a.c"].lines == {1: 0, 2: 1}


def test_a_payload_without_coverage_files_is_refused() -> None:
    with pytest.raises(MalformedPayload, match="holds no coverage files"):
        parse_payload(v1([]), ParseLimits(max_bytes=LIMIT))


def _shapes(name: str = "coverage.xml", **extra: object) -> bytes:
    data = packed((PKG_REPORTS / "shapes.xml").read_bytes())
    return v1([{"filename": name, "format": "base64+compressed", "data": data}], **extra)


def test_files_under_a_package_source_are_placed_by_the_network_and_the_source() -> None:
    # <source>/ck/shapes</source>, filename="__init__.py": the bare name is
    # ambiguous in the network (three __init__.py), <source> + name is not.
    parsed = parse_payload(_shapes(network_files=PKG_NETWORK), ParseLimits(max_bytes=LIMIT))
    files = parsed.report.files
    assert "__init__.py" not in files and "area.py" not in files
    assert files["shapes/__init__.py"].lines == {3: 1, 5: 1, 6: 1}
    assert files["shapes/area.py"].lines == {1: 1, 2: 1, 3: 1, 4: 0, 5: 0, 6: 0}
    assert files["shapes/units/convert.py"].lines == {1: 1, 2: 1, 3: 1, 4: 0}
    assert parsed.warnings == []


def test_the_legacy_network_block_places_package_source_files_alike() -> None:
    body = (
        "\n".join(PKG_NETWORK).encode()
        + b"\n<<<<<< network\n# path=coverage.xml\n"
        + (PKG_REPORTS / "shapes.xml").read_bytes()
        + b"\n<<<<<< EOF\n"
    )
    parsed = parse_payload(body, ParseLimits(max_bytes=LIMIT))
    assert {"shapes/__init__.py", "shapes/area.py", "shapes/units/convert.py"} <= set(
        parsed.report.files
    )
    assert parsed.warnings == []


def test_each_source_is_tried_in_order_and_the_one_in_the_network_is_kept() -> None:
    cobertura = (
        b'<?xml version="1.0" ?><coverage><sources><source>/ck/docs</source>'
        b"<source>/ck/lib</source></sources><packages><package><classes>"
        b'<class filename="__init__.py"><lines><line number="1" hits="1"/></lines></class>'
        b"</classes></package></packages></coverage>"
    )
    network = ["lib/__init__.py", "tests/__init__.py", "docs/conf.py"]
    body = v1(
        [{"filename": "cov.xml", "format": "base64+compressed", "data": packed(cobertura)}],
        network_files=network,
    )
    assert list(parse_payload(body, ParseLimits(max_bytes=LIMIT)).report.files) == [
        "lib/__init__.py"
    ]


def test_without_a_network_the_coverage_files_directory_places_the_source() -> None:
    # codecov-cli names the coverage file by its absolute path: the checkout is
    # its directory, and <source> lies below it.
    parsed = parse_payload(_shapes(f"{PKG_CHECKOUT}/coverage.xml"), ParseLimits(max_bytes=LIMIT))
    assert {"shapes/__init__.py", "shapes/area.py", "shapes/units/convert.py"} <= set(
        parsed.report.files
    )


def test_without_a_network_or_a_located_coverage_file_names_stay_as_written() -> None:
    # As Codecov: nothing tells where <source> is in the repository.
    parsed = parse_payload(_shapes("coverage.xml"), ParseLimits(max_bytes=LIMIT))
    assert {"__init__.py", "area.py", "units/convert.py"} <= set(parsed.report.files)


def test_an_empty_init_py_is_neither_kept_nor_counted_as_a_file() -> None:
    # shapes/units/__init__.py is empty: <class> without lines. Codecov's
    # report drops a file without lines; the upload holds three files.
    parsed = parse_payload(_shapes(network_files=PKG_NETWORK), ParseLimits(max_bytes=LIMIT))
    assert sorted(parsed.report.files) == [
        "shapes/__init__.py",
        "shapes/area.py",
        "shapes/units/convert.py",
    ]
    assert parsed.report.totals().files == 3
    stored = codec.load(payload_intermediate(_shapes(), ParseLimits(max_bytes=LIMIT)).data)
    assert "units/__init__.py" not in stored.files and len(stored.files) == 3


def test_a_file_whose_lines_the_fixes_all_drop_is_not_kept() -> None:
    lcov = b"SF:a.c\nDA:1,1\nend_of_record\nSF:b.c\nDA:1,0\nend_of_record\n"
    body = v1(
        [{"filename": "lcov.info", "format": "base64+compressed", "data": packed(lcov)}],
        report_fixes={"format": "legacy", "value": {"b.c": {"lines": [1]}}},
    )
    assert list(parse_payload(body, ParseLimits(max_bytes=LIMIT)).report.files) == ["a.c"]


def test_an_upload_is_parsed_with_the_collector_paused_and_it_is_on_again_after(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import gc

    from app.ingest import parse as parse_module

    seen: list[bool] = []
    real = parse_module.parse_into

    def watched(*args: Any, **kwargs: Any) -> str:
        seen.append(gc.isenabled())
        return real(*args, **kwargs)

    monkeypatch.setattr(parse_module, "parse_into", watched)
    was = gc.isenabled()
    gc.enable()
    try:
        out = parse_module.report_intermediate(LCOV, ParseLimits(), "lcov")
        payload = payload_intermediate(
            v1([{"filename": "lcov.info", "format": "base64+compressed", "data": packed(LCOV)}]),
            ParseLimits(),
        )
        assert seen == [False, False]  # the payload's one file too
        assert gc.isenabled()
        assert codec.load(out.data).totals().lines == 2
        assert codec.load(payload.data).totals().lines == 2
    finally:
        gc.enable() if was else gc.disable()
