"""Coverage reports: parsing (format detected from content) and merging.

Formats: Cobertura XML, JaCoCo XML, LCOV, coverage.py JSON and Go
coverprofiles (one module each under ``formats/``), all parsed into the one
model of ``model.py``; ``detect.py`` tells them apart by content,
``paths.py`` makes paths repository-relative, ``safexml.py`` keeps XML safe
and streaming (``benchmarks/emit.py``, outside the package, writes each format back).

The stable surface the pipeline uses:

- ``parse_report(raw, limits=..., roots=...) -> Report`` raises a
  ``ReportError`` subclass with a readable message for anything it cannot
  read, and nothing else. ``roots`` (optional) are absolute repository-root
  directories used to make absolute paths repository-relative.
- ``Report.merge``, ``Report.totals``, ``Report.to_bytes`` /
  ``Report.from_bytes`` (the intermediate form kept in Redis),
  ``Report.to_json``.
"""

from app.coverage.model import Branches, FileCoverage, Report, Totals
from app.coverage.parse import ParseLimits, detect_format, parse_report

__all__ = [
    "Branches",
    "FileCoverage",
    "ParseLimits",
    "Report",
    "Totals",
    "detect_format",
    "parse_report",
]
