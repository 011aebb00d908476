"""The upload fields every codecov-cli upload request carries: their limits,
and the ``UploadMeta`` they become."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from app.api.bodies import (
    MAX_MAP_BYTES,
    MAX_MAP_ENTRIES,
    MAX_PULLID,
    UploadBody,
    bounded_map,
    full_sha,
    pull_number,
)
from app.api.errors import ApiError
from app.ingest.store import UploadMeta


def test_pull_number_takes_the_uploaders_ways_of_saying_none() -> None:
    for absent in (None, "", "null", "None", "false"):
        assert pull_number(absent) is None
    assert (pull_number("7"), pull_number(0), pull_number(MAX_PULLID)) == (7, 0, MAX_PULLID)


def test_pull_number_refuses_what_is_not_a_stored_integer() -> None:
    with pytest.raises(ValueError, match="'x' is not an integer"):
        pull_number("x")
    for out_of_range in (-1, MAX_PULLID + 1):
        with pytest.raises(ValueError, match=f"is not between 0 and {MAX_PULLID}"):
            pull_number(out_of_range)


def test_full_sha_keeps_every_digit_and_refuses_a_short_one_as_a_value_error() -> None:
    assert full_sha("a" * 40) == "a" * 40
    with pytest.raises(ValueError, match="is not a full SHA"):
        full_sha("abcdef1")


def test_a_map_is_bounded_in_entries_and_in_bytes() -> None:
    assert bounded_map(None, "env") is None
    assert bounded_map({"A": "1"}, "env") == {"A": "1"}
    at_limit = {f"K{i}": "" for i in range(MAX_MAP_ENTRIES)}
    assert bounded_map(at_limit, "env") == at_limit
    with pytest.raises(ValueError, match=f"env has {MAX_MAP_ENTRIES + 1} entries"):
        bounded_map({**at_limit, "one more": ""}, "env")
    with pytest.raises(ValueError, match=f"cli_args is .* bytes of JSON; at most {MAX_MAP_BYTES}"):
        bounded_map({"big": "x" * MAX_MAP_BYTES}, "cli_args")


def test_an_upload_body_becomes_the_upload_meta_ignoring_unknown_fields() -> None:
    body = UploadBody.model_validate(
        {
            "ci_service": "github-actions",
            "ci_url": "https://ci.example/run/7",
            "env": {"PYTHON": "3.11"},
            "flags": [" unit ", "", "backend"],
            "job_code": "unit",
            "name": "py311",
            "cli_args": {"build_code": 42},
            "version": "11.3.1",
        }
    )
    assert body.upload_meta() == UploadMeta(
        flags=["unit", "backend"],
        name="py311",
        job_code="unit",
        build_code="42",
        build_url="https://ci.example/run/7",
        ci_service="github-actions",
        env={"PYTHON": "3.11"},
    )
    assert UploadBody().upload_meta() == UploadMeta()


def test_an_upload_body_refuses_bad_flags_and_oversized_maps_naming_the_field() -> None:
    cases = {
        "flags": {"flags": ["no spaces"]},
        "env": {"env": {f"K{i}": "v" for i in range(MAX_MAP_ENTRIES + 1)}},
        "cli_args": {"cli_args": {"big": "x" * MAX_MAP_BYTES}},
        "name": {"name": "n" * 101},
    }
    for field, body in cases.items():
        with pytest.raises(ValidationError) as refused:
            UploadBody.model_validate(body)
        assert [e["loc"][0] for e in refused.value.errors()] == [field]


def test_a_declared_payload_size_over_the_limit_is_413_and_at_it_or_undeclared_passes() -> None:
    UploadBody(report_payload_bytes=100).check_declared_size(100)
    UploadBody().check_declared_size(100)
    with pytest.raises(ApiError) as refused:
        UploadBody(report_payload_bytes=101).check_declared_size(100)
    assert refused.value.status == 413
    assert refused.value.detail == "the payload of 101 bytes is over the limit of 100 bytes"
