"""Decoding payloads captured from the real uploaders (tests/fixtures/payloads).

The captures are the PUT bodies codecov-cli 11.3.1 and the legacy codecov
2.1.13 uploader sent to ``covworker serve`` for the reports in
tests/fixtures/reports/coveragepy and tests/fixtures/reports/c.
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest

from app.errors import MalformedPayload, ReportTooLarge
from app.ingest.payload import decode_payload
from tests.app.ingest.conftest import CALC, LIMIT, PAYLOADS, PY_REPORTS
from tests.support.payloads import packed, v1


def test_the_cli_payload_decodes_to_its_two_files_byte_for_byte() -> None:
    payload = decode_payload(
        (PAYLOADS / "codecov-cli-11.3.1-upload-process.json").read_bytes(), LIMIT
    )
    assert payload.kind == "v1"
    by_name = {Path(f.name).name: f.data for f in payload.files}
    assert by_name == {
        "cov-sum.xml": (PY_REPORTS / "run-sum.xml").read_bytes(),
        "cov-divide.info": (PY_REPORTS / "run-divide.info").read_bytes(),
    }
    assert payload.network == CALC  # the trailing "" of git ls-files -z dropped
    assert payload.fixes == {}


def test_the_cli_payload_of_a_c_project_carries_its_report_fixes() -> None:
    payload = decode_payload((PAYLOADS / "codecov-cli-11.3.1-c-fixes.json").read_bytes(), LIMIT)
    assert set(payload.fixes) == {"c/calc.c"}
    assert {4, 6, 12, 55} <= payload.fixes["c/calc.c"].lines
    assert payload.fixes["c/calc.c"].eof is None


def test_the_legacy_uploaders_gzipped_text_payload_decodes_to_its_files_and_network() -> None:
    payload = decode_payload((PAYLOADS / "codecov-2.1.13-legacy.txt.gz").read_bytes(), LIMIT)
    assert payload.kind == "legacy"
    assert [f.name for f in payload.files] == ["cov-sum.xml", "cov-divide.info"]
    assert payload.files[0].data == (PY_REPORTS / "run-sum.xml").read_bytes().strip()
    assert payload.files[1].data == (PY_REPORTS / "run-divide.info").read_bytes().strip()
    assert payload.network == CALC


def test_the_clis_legacy_text_payload_decodes_to_its_one_file() -> None:
    payload = decode_payload((PAYLOADS / "codecov-cli-11.3.1-legacy.txt").read_bytes(), LIMIT)
    assert [Path(f.name).name for f in payload.files] == ["cov-sum.xml"]
    assert payload.network == CALC


def test_a_legacy_fixes_section_and_the_ignored_tail_are_honoured() -> None:
    text = (
        b"a.c\n<<<<<< network\n# path=fixes\na.c:3,4\n<<<<<< EOF\n"
        b"# path=lcov.info\nSF:a.c\nDA:3,1\nend_of_record\n<<<<<< EOF\n"
        b"==FROMNOWONIGNOREDBYCODECOV==>>>\n# path=junk\nnot a report\n<<<<<< EOF"
    )
    payload = decode_payload(text, LIMIT)
    assert [f.name for f in payload.files] == ["lcov.info"]
    assert payload.fixes["a.c"].lines == {3, 4}


def test_a_body_that_is_no_payload_is_one_plain_report() -> None:
    report = (PY_REPORTS / "run-sum.xml").read_bytes()
    payload = decode_payload(report, LIMIT)
    assert payload.kind == "plain" and payload.files[0].data == report.strip()


@pytest.mark.parametrize(
    ("body", "names"),
    [
        (b'{"coverage_files": "x"}', "coverage_files must be a list"),
        (
            v1([{"filename": "a", "format": "base64+compressed", "data": "@@"}]),
            "coverage_files[0].data",
        ),
        (
            v1([{"filename": "a", "format": "base64+compressed", "data": "aGVsbG8="}]),
            "not valid compressed",
        ),
        (v1([{"filename": "a"}]), "coverage_files[0] must be an object"),
        (b'{"coverage_files": [}', "not valid JSON"),
        (
            v1([], report_fixes={"value": {"a.c": {"lines": "x"}}}),
            "report_fixes.value['a.c'].lines",
        ),
    ],
)
def test_a_broken_cli_payload_is_refused_naming_the_field(body: bytes, names: str) -> None:
    with pytest.raises(MalformedPayload, match=re.escape(names)):
        decode_payload(body, LIMIT)


def test_a_compressed_file_inflating_past_the_limit_is_refused_without_inflating_it_all() -> None:
    bomb = v1(
        [{"filename": "bomb", "format": "base64+compressed", "data": packed(b"0" * 5_000_000)}]
    )
    with pytest.raises(ReportTooLarge, match="more than 100000 bytes"):
        decode_payload(bomb, 100_000)
    with pytest.raises(ReportTooLarge):
        decode_payload(gzip.compress(b"# path=x\n" + b"0" * 5_000_000), 100_000)


def test_one_inflate_budget_covers_every_file_of_a_payload() -> None:
    # Three parts of 400 KB each: every one is under the limit, the three are not.
    part = {"filename": "x", "format": "base64+compressed", "data": packed(b" " * 400_000)}
    raw = v1([dict(part, filename=f"f{i}.info") for i in range(3)])

    with pytest.raises(ReportTooLarge) as caught:
        decode_payload(raw, 1_000_000)

    assert "decompresses to more than 1000000 bytes in all" in str(caught.value)
    assert "coverage_files[2]" in str(caught.value)
    assert len(decode_payload(raw, 1_200_000).files) == 3
