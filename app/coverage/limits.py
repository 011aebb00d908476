"""Limits on what one raw report may hold, so no upload can exhaust a worker.

The byte limit is checked before parsing; files and line records are counted
while parsing, so a report over a limit stops early instead of first
building a huge model. Line numbers are bounded too: a Go block claiming to
span lines 1 to 2**60 must not make the parser loop for ever.

What one upload may unpack and hold also grows with the bytes it stored
(``ParseLimits.for_input``), so a tiny upload cannot make a worker do
enormous work: an 86-byte Go profile whose block spans lines 1 to 4,000,000
would be 4,000,000 line records. Real reports hold at most about 0.3 line
records per stored (compressed) byte and unpack to at most about 25 times
their compressed size; the bounds below leave a margin of 2.5 to 3 over
that. Unpacking holds about twice what it unpacks to at its peak (zlib's
output buffer, then the bytes object), so the inflate bounds are half the
64 MiB + 200 bytes per stored byte a worker should spend on an upload.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from app.errors import ReportTooLarge

#: Largest raw report accepted, in bytes.
DEFAULT_MAX_BYTES = 200 * 1024 * 1024
#: Most distinct source files one report may name.
DEFAULT_MAX_FILES = 100_000
#: Most line records one report may hold (all files together).
DEFAULT_MAX_LINES = 20_000_000
#: Largest line number accepted: no real source file is longer.
DEFAULT_MAX_LINE_NUMBER = 10_000_000
#: Line records any upload may hold, however small ...
RECORDS_FLOOR = 200_000
#: ... plus this many per byte it stored.
RECORDS_PER_BYTE = 1
#: Bytes any upload may unpack to (all its compressed parts together) ...
INFLATE_FLOOR = 16 * 1024 * 1024
#: ... plus this many times the bytes it stored.
INFLATE_RATIO = 64


@dataclass(frozen=True, slots=True)
class ParseLimits:
    max_bytes: int = DEFAULT_MAX_BYTES
    max_files: int = DEFAULT_MAX_FILES
    max_lines: int = DEFAULT_MAX_LINES
    max_line_number: int = DEFAULT_MAX_LINE_NUMBER
    #: The bytes the upload stored, once ``for_input`` scaled the limits to it.
    input_bytes: int | None = None

    def for_input(self, size: int) -> ParseLimits:
        """These limits for an upload that stored ``size`` bytes: at most
        ``RECORDS_FLOOR + RECORDS_PER_BYTE * size`` line records, and
        ``max_bytes`` (which bounds what it unpacks to, in all) at most
        ``INFLATE_FLOOR + INFLATE_RATIO * size``."""
        return replace(
            self,
            max_bytes=min(self.max_bytes, INFLATE_FLOOR + INFLATE_RATIO * size),
            max_lines=min(self.max_lines, RECORDS_FLOOR + RECORDS_PER_BYTE * size),
            input_bytes=size,
        )

    def scaled_note(self) -> str:
        """`` (the limit for an upload of N bytes)`` once scaled by ``for_input``."""
        if self.input_bytes is None:
            return ""
        return f" (the limit for an upload of {self.input_bytes} bytes)"

    def check_bytes(self, size: int) -> None:
        if size > self.max_bytes:
            raise ReportTooLarge(
                f"report is {size} bytes, over the limit of {self.max_bytes} bytes"
            )

    def too_many_files(self, fmt: str) -> ReportTooLarge:
        return ReportTooLarge(f"{fmt} report names more than {self.max_files} files")

    def too_many_lines(self, fmt: str) -> ReportTooLarge:
        return ReportTooLarge(
            f"{fmt} report holds more than {self.max_lines} line records{self.scaled_note()}"
        )


#: The warning a parser adds when the report itself says the project has no
#: code (Cobertura ``lines-valid="0"``, a Go profile of only ``mode:`` lines,
#: coverage.py JSON whose totals count no statements): an empty report is
#: then accepted, where any other empty report is an error.
NO_CODE = "the report says the project has no code; it adds nothing to the commit"
