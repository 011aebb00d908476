"""Format detection reads the content, never a file name."""

from __future__ import annotations

import gzip
import json

import pytest

from app.coverage import detect, detect_format
from app.coverage.detect import (
    CLOVER,
    COBERTURA,
    COVERAGE_JSON,
    GCOV_JSON,
    GO,
    HEAD_BYTES,
    ISTANBUL,
    JACOCO,
    LCOV,
    LLVM_JSON,
    SIMPLECOV,
)
from app.errors import UnknownFormat
from tests.support.paths import REPORTS

pytestmark = pytest.mark.timeout(10)


@pytest.mark.parametrize(
    ("fixture", "fmt"),
    [
        ("coveragepy/combined.xml", COBERTURA),
        ("coveragepy/combined.json", COVERAGE_JSON),
        ("coveragepy/combined.info", LCOV),
        ("go/set-all.out", GO),
        ("go/atomic-Sum.out", GO),
        ("jacoco/combined.xml", JACOCO),
        ("c/combined.info", LCOV),
        ("c/run-sum.xml", COBERTURA),
        ("js/nyc-sum.clover.xml", CLOVER),
        ("js/jest-sum.clover.xml", CLOVER),
        ("js/nyc-sum.coverage-final.json", ISTANBUL),
        ("js/c8-sum.coverage-final.json", ISTANBUL),
        ("js/nyc-sum.lcov.info", LCOV),
        ("llvm/run-sum.json", LLVM_JSON),
        ("llvm/run-sum.lcov.info", LCOV),
        ("gcovjson/run-sum.gcov.json.gz", GCOV_JSON),
        ("simplecov/two-runs.resultset.json", SIMPLECOV),
    ],
)
def test_each_real_tool_output_is_detected_as_its_format(fixture: str, fmt: str) -> None:
    assert detect_format((REPORTS / fixture).read_bytes()) == fmt


@pytest.mark.parametrize(
    ("raw", "fmt"),
    [
        (b"\xef\xbb\xbf<?xml version='1.0'?><coverage/>", COBERTURA),
        (b"\n\n  <!-- generated --><?pi x?>\n<coverage version='1'/>", COBERTURA),
        (
            b'<?xml version="1.0"?>\n<!DOCTYPE coverage SYSTEM "http://x/coverage-04.dtd">'
            b"\n<coverage/>",
            COBERTURA,
        ),
        (b'<!DOCTYPE report PUBLIC "-//JACOCO//DTD Report 1.1//EN" "report.dtd"><report/>', JACOCO),
        (b'{"meta": {"format": 3}, "files": {}}', COVERAGE_JSON),
        (b'  {\n "files": {}, "meta": {"version": "7.6.1"}}', COVERAGE_JSON),
        (b"mode: atomic\r\na.go:1.1,2.2 1 1\r\n", GO),
        (b"SF:a.c\nDA:1,1\nend_of_record\n", LCOV),
        (b"TN:\nSF:a.c\nend_of_record\n", LCOV),
        (b"VER:2\nSF:a.c\nend_of_record\n", LCOV),
        (b"FN:1,main\nSF:a.c\nend_of_record\n", LCOV),
        # Clover shares Cobertura's root, and Istanbul a JSON object: told apart by content
        (b'<coverage generated="1"><project/></coverage>', CLOVER),
        (b'<coverage clover="3.2.0"/>', CLOVER),
        (b"<coverage><!-- c --><project timestamp='1'>", CLOVER),
        (b'<coverage version="1"><sources/><packages/></coverage>', COBERTURA),
        (b"<coverage><packages><package name='project'/></packages></coverage>", COBERTURA),
        (b'{"/a.js": {"path": "/a.js", "statementMap": {}}}', ISTANBUL),
        (b"{}", ISTANBUL),
    ],
)
def test_the_format_is_told_from_the_head_of_the_content(raw: bytes, fmt: str) -> None:
    assert detect_format(raw) == fmt


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b"", "empty"),
        (b"\xef\xbb\xbf   \n", "empty"),
        (b"<svg xmlns='http://www.w3.org/2000/svg'/>", "<svg>"),
        (b'{"numbers": [1], "names": {}}', "matches no known coverage format exactly"),
        (b"[1, 2, 3]", "not a recognised"),
        (b"GIF89a\x00\x00\x01", "binary"),
        (b"coverage: 81% of statements\n", "not a recognised"),
    ],
)
def test_content_of_no_known_format_is_refused_with_a_reason(raw: bytes, reason: str) -> None:
    with pytest.raises(UnknownFormat, match=reason):
        detect_format(raw)


def test_a_coverage_root_after_a_long_comment_is_still_found() -> None:
    raw = b"<!--" + b"x" * 10_000 + b"--><coverage/>"
    assert detect_format(raw) == COBERTURA


def llvm_export(files: int, *, order: tuple[str, ...] = ("data", "type", "version")) -> bytes:
    """An llvm-cov export of ``files`` copies of the real one's files, its
    top-level keys in ``order`` (llvm-cov writes data, type, version)."""
    import json

    real = json.loads((REPORTS / "llvm/run-sum.json").read_bytes())
    doc = {
        "data": [{"files": real["data"][0]["files"] * files, "totals": real["data"][0]["totals"]}],
        "type": "llvm.coverage.json.export",
        "version": "2.0.1",
    }
    return json.dumps({key: doc[key] for key in order}).encode()


@pytest.mark.parametrize(
    "order",
    [("data", "type", "version"), ("version", "data", "type"), ("type", "version", "data")],
)
def test_an_llvm_export_of_several_megabytes_is_llvm_whatever_its_key_order(
    order: tuple[str, ...],
) -> None:
    raw = llvm_export(1000, order=order)
    assert len(raw) > 3_000_000 and b'"files"' in raw[:1024]

    assert detect_format(raw) == LLVM_JSON
    assert detect_format(gzip.compress(raw)) == LLVM_JSON


def test_coverage_py_json_naming_llvms_type_in_its_head_is_still_coverage_py() -> None:
    raw = b'{"meta": {"version": "7.4"}, "files": {"llvm.coverage.json.export": {}}}'
    assert detect_format(raw) == COVERAGE_JSON


FLOW = (
    b'{"flowStatus": "ok", "expressions": {"covered_count": 3, "uncovered_count": 1},'
    b' "files": {"src/a.js": {"expressions": {"covered_count": 3, "uncovered_count": 1,'
    b' "uncovered_locs": [{"start": {"line": 2, "column": 1}, "end": {"line": 2, "column": 4}}]}}}}'
)


def test_flow_coverage_json_is_flows_even_beside_a_coverage_py_meta() -> None:
    assert detect_format(FLOW) == detect.FLOW
    assert detect_format(b'{"meta": {"version": "7"}, "files": {}, "flowStatus": "ok"}') == (
        detect.FLOW
    )


@pytest.mark.parametrize(
    "raw",
    [
        b'{"files": {"a.py": {"executed_lines": [1]}}}',  # no meta
        b'{"meta": {"tool": "x"}, "files": {}}',  # a meta that is not coverage.py's
        b'{"expressions": {"covered_count": 3}, "files": {"a.js": {}}}',  # Flow without flowStatus
    ],
    ids=["no meta", "foreign meta", "flow without flowStatus"],
)
def test_json_that_is_not_exactly_coverage_pys_is_refused_naming_the_formats_tried(
    raw: bytes,
) -> None:
    with pytest.raises(UnknownFormat) as caught:
        detect_format(raw)
    message = str(caught.value)
    assert "matches no known coverage format exactly (tried: " in message
    for name in ("coverage.py JSON", "Istanbul JSON", "LCOV", "gcov text", "Cobertura XML"):
        assert name in message


def test_coverage_py_json_with_its_keys_sorted_is_found_past_a_long_files_object() -> None:
    files = {f"pkg/m{n}.py": {"executed_lines": list(range(1, 50))} for n in range(2000)}
    raw = json.dumps({"files": files, "meta": {"version": "7.6.1"}}, sort_keys=True).encode()
    assert len(raw) > 4 * HEAD_BYTES
    assert detect_format(raw) == COVERAGE_JSON
    assert detect_format(gzip.compress(raw)) == COVERAGE_JSON


@pytest.mark.parametrize(
    ("raw", "fmt"),
    [
        (
            b'{"repo_token": "t", "source_files": [{"name": "a.py", "coverage": [1]}]}',
            "coveralls-json",
        ),
        (b'{"files": [{"name": "R/a.R", "coverage": [null, 1]}], "uploader": "R"}', "covr-json"),
        (b'{"fileReports": [{"filename": "A.scala", "coverage": {"1": 1}}]}', "scala-json"),
    ],
)
def test_a_json_report_is_known_by_the_top_level_key_only_its_format_writes(
    raw: bytes, fmt: str
) -> None:
    assert detect_format(raw) == fmt


@pytest.mark.parametrize(
    "raw",
    [
        b'{"files": [{"name": "R/a.R", "coverage": [null, 1]}], "uploader": "Rx"}',
        b'{"source_files": {"a.py": [1]}}',
        b'{"x": {"source_files": []}}',
    ],
)
def test_a_json_report_with_a_neighbours_key_of_the_wrong_kind_is_refused(raw: bytes) -> None:
    with pytest.raises(UnknownFormat, match="tried"):
        detect_format(raw)


def test_covrs_uploader_written_after_a_long_files_list_is_found_in_the_whole_report() -> None:
    files = json.dumps([{"name": f"R/f{i}.R", "coverage": [None, 1] * 50} for i in range(400)])
    raw = ('{"files": ' + files + ', "uploader": "R"}').encode()
    assert len(raw) > HEAD_BYTES
    assert detect_format(raw) == "covr-json"
