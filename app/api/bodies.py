"""What every codecov-cli upload request says about its upload, validated once.

The coverage routes (:mod:`app.api.cli_uploads`) and the test-results route
(:mod:`app.api.test_results`) take the same upload fields (CI service and
URL, ``env``, flags, job, name, ``cli_args``) with the same limits, and turn
them into the same :class:`~app.ingest.store.UploadMeta`: one model here,
so a limit or a validator changed for one route holds for the other.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from app.api.errors import ApiError
from app.errors import InvalidUpload
from app.ingest.accept import validate_flags, validate_full_sha
from app.ingest.store import UploadMeta

#: Largest pull request number stored (PostgreSQL ``integer``).
MAX_PULLID = 2**31 - 1
#: Most entries of ``env`` and ``cli_args``, and most bytes of their JSON.
MAX_MAP_ENTRIES = 100
MAX_MAP_BYTES = 16 * 1024


def full_sha(value: str) -> str:
    """A commit SHA to store (all its digits), as a field validator's error."""
    try:
        return validate_full_sha(value)
    except InvalidUpload as exc:
        raise ValueError(str(exc)) from None


def pull_number(value: Any) -> int | None:
    """The uploaders' pull request number: absent, or a stored integer."""
    if value in (None, "", "null", "None", "false"):
        return None
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ValueError(f"pull request number {str(value)[:40]!r} is not an integer") from None
    if not 0 <= number <= MAX_PULLID:
        raise ValueError(f"pull request number {number} is not between 0 and {MAX_PULLID}")
    return number


def bounded_map(value: dict[str, Any] | None, what: str) -> dict[str, Any] | None:
    if value is None:
        return None
    if len(value) > MAX_MAP_ENTRIES:
        raise ValueError(f"{what} has {len(value)} entries; at most {MAX_MAP_ENTRIES}")
    size = len(json.dumps(value, default=str))
    if size > MAX_MAP_BYTES:
        raise ValueError(f"{what} is {size} bytes of JSON; at most {MAX_MAP_BYTES}")
    return value


class UploadBody(BaseModel):
    """An upload's own fields, as codecov-cli sends them (others are ignored)."""

    model_config = ConfigDict(extra="ignore")
    ci_service: str | None = Field(None, max_length=64)
    ci_url: str | None = Field(None, max_length=2048)
    env: dict[str, str | None] | None = None
    flags: list[str] | None = Field(None, max_length=100)
    job_code: str | None = Field(None, max_length=255)
    name: str | None = Field(None, max_length=100)
    file_not_found: bool = False
    report_payload_bytes: int | None = Field(None, ge=0)
    cli_args: dict[str, Any] | None = None

    @field_validator("env")
    @classmethod
    def _env(cls, value: dict[str, str | None] | None) -> dict[str, str | None] | None:
        return bounded_map(value, "env")

    @field_validator("cli_args")
    @classmethod
    def _cli_args(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        return bounded_map(value, "cli_args")

    @field_validator("flags")
    @classmethod
    def _flags(cls, value: list[str] | None) -> list[str]:
        try:
            return validate_flags([f.strip() for f in value or [] if f.strip()])
        except InvalidUpload as exc:
            raise ValueError(str(exc)) from None

    def check_declared_size(self, limit: int) -> None:
        """A 413 before anything is stored when the size the CLI declares is over the limit."""
        size = self.report_payload_bytes
        if size is not None and size > limit:
            raise ApiError(413, f"the payload of {size} bytes is over the limit of {limit} bytes")

    def upload_meta(self) -> UploadMeta:
        build = (self.cli_args or {}).get("build_code")
        return UploadMeta(
            flags=list(self.flags or []),
            name=self.name,
            job_code=self.job_code,
            build_code=str(build) if build else None,
            build_url=self.ci_url,
            ci_service=self.ci_service,
            env=self.env,
        )
