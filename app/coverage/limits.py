"""Limits on what one raw report may hold, so no upload can exhaust a worker.

The byte limit is checked before parsing; files and line records are counted
while parsing, so a report over a limit stops early instead of first
building a huge model. Line numbers are bounded too: a Go block claiming to
span lines 1 to 2**60 must not make the parser loop for ever.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.errors import ReportTooLarge

#: Largest raw report accepted, in bytes.
DEFAULT_MAX_BYTES = 200 * 1024 * 1024
#: Most distinct source files one report may name.
DEFAULT_MAX_FILES = 100_000
#: Most line records one report may hold (all files together).
DEFAULT_MAX_LINES = 20_000_000
#: Largest line number accepted: no real source file is longer.
DEFAULT_MAX_LINE_NUMBER = 10_000_000


@dataclass(frozen=True, slots=True)
class ParseLimits:
    max_bytes: int = DEFAULT_MAX_BYTES
    max_files: int = DEFAULT_MAX_FILES
    max_lines: int = DEFAULT_MAX_LINES
    max_line_number: int = DEFAULT_MAX_LINE_NUMBER

    def check_bytes(self, size: int) -> None:
        if size > self.max_bytes:
            raise ReportTooLarge(
                f"report is {size} bytes, over the limit of {self.max_bytes} bytes"
            )

    def too_many_files(self, fmt: str) -> ReportTooLarge:
        return ReportTooLarge(f"{fmt} report names more than {self.max_files} files")

    def too_many_lines(self, fmt: str) -> ReportTooLarge:
        return ReportTooLarge(f"{fmt} report holds more than {self.max_lines} line records")


#: The warning a parser adds when the report itself says the project has no
#: code (Cobertura ``lines-valid="0"``, a Go profile of only ``mode:`` lines,
#: coverage.py JSON whose totals count no statements): an empty report is
#: then accepted, where any other empty report is an error.
NO_CODE = "the report says the project has no code; it adds nothing to the commit"
