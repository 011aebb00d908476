"""Coverage reports: parsing (format detected from content) and merging.

The stable surface the pipeline uses:

- ``parse_report(raw, limits=...) -> Report`` raises a ``ReportError``
  subclass with a readable message for anything it cannot read.
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
