"""A tiny upload cannot make the worker do enormous work: what it may unpack
and hold is bounded by the bytes it stored, and going over fails that upload
only, with a reason that says so."""

from __future__ import annotations

import base64
import gzip
import json
import zlib

import pytest
import sqlalchemy as sa

from app.coverage.limits import RECORDS_FLOOR, RECORDS_PER_BYTE
from app.db.models import Upload, UploadState
from tests.support.pipeline import Pipeline
from tests.support.synthetic import ci_matrix

pytestmark = pytest.mark.timeout(120)

#: 86 bytes: one block claiming lines 1 to 4,000,000 (4 million line records).
GO_RANGE = b"mode: set\ngithub.com/acme/app/main.go:1.1,4000000.2 1 1\n".ljust(86, b"\n")


def store(pipeline: Pipeline, raw: bytes, payload_format: str | None = None) -> int:
    accepted = pipeline.upload([("upload", raw)])
    if payload_format:
        with pipeline.services.sessions.begin() as session:
            session.execute(
                sa.update(Upload)
                .where(Upload.id == accepted.upload_ids[0])
                .values(payload_format=payload_format)
            )
    return accepted.upload_ids[0]


def error_of(pipeline: Pipeline, upload_id: int) -> str:
    with pipeline.services.sessions() as session:
        row = session.get(Upload, upload_id)
        assert row is not None and row.state == UploadState.ERROR
        return row.error or ""


def test_a_go_block_spanning_millions_of_lines_in_a_tiny_profile_is_refused(
    pipeline: Pipeline,
) -> None:
    assert len(GO_RANGE) == 86
    upload_id = store(pipeline, GO_RANGE)

    assert pipeline.process(upload_id) == UploadState.ERROR

    limit = RECORDS_FLOOR + RECORDS_PER_BYTE * 86
    assert error_of(pipeline, upload_id) == (
        f"Go coverprofile report holds more than {limit} line records "
        "(the limit for an upload of 86 bytes)"
    )


def test_many_small_bombs_in_one_payload_share_one_inflate_budget(pipeline: Pipeline) -> None:
    bomb = base64.b64encode(zlib.compress(b"\n" * (2 << 20))).decode()  # 2 MiB each
    raw = json.dumps(
        {
            "coverage_files": [
                {"filename": f"f{i}.info", "format": "base64+compressed", "data": bomb}
                for i in range(40)
            ]
        }
    ).encode()
    upload_id = store(pipeline, raw, "v1")

    assert pipeline.process(upload_id) == UploadState.ERROR

    assert "the payload decompresses to more than" in error_of(pipeline, upload_id)
    assert "bytes in all" in error_of(pipeline, upload_id)


def test_a_payload_of_deep_network_paths_resolves_its_report_path(pipeline: Pipeline) -> None:
    # 4 listed paths of 16,000 segments: a few hundred bytes gzipped.
    deep = ["/".join(["d"] * 16_000 + [f"f{i}.py"]) for i in range(4)]
    lcov = b"SF:/ci/" + deep[1].encode() + b"\nDA:1,1\nend_of_record\n"
    doc = {
        "coverage_files": [
            {
                "filename": "lcov.info",
                "format": "base64+compressed",
                "data": base64.b64encode(zlib.compress(lcov)).decode(),
            }
        ],
        "network_files": deep,
    }
    upload_id = store(pipeline, gzip.compress(json.dumps(doc).encode()), "v1")

    assert pipeline.process(upload_id) == UploadState.PROCESSED

    with pipeline.services.sessions() as session:
        row = session.get(Upload, upload_id)
        assert row is not None and not row.warnings  # resolved, not kept as unknown


def test_a_real_sized_report_still_fits_the_limits_of_its_size(pipeline: Pipeline) -> None:
    accepted = pipeline.upload(ci_matrix(1, files=200, lines=400))
    assert pipeline.process(accepted.upload_ids[0]) == UploadState.PROCESSED
