"""Coverage reports: parsing (format detected from content) and merging.

Formats (one module each under ``formats/``): Cobertura, JaCoCo, Clover and
OpenCover XML; LCOV; coverage.py, Istanbul, SimpleCov, llvm-cov export and
gcov JSON; gcov text; Go coverprofiles; dotCover, scoverage, Bullseye, Visual
Studio and Mono XML, Xcode's xccoverage plist; Coveralls, covr, Scala, Flow,
Codecov v1, Salesforce, GAP and elm-coverage JSON; llvm-cov show and luacov
text and D listings (``formats/linemap.py`` is what the line-only ones
share). All are parsed into the one model of
``model.py``; ``detect.py`` tells them apart by content (gzip unpacked
first), ``paths.py`` makes paths repository-relative, ``safexml.py`` keeps
XML safe and streaming, ``jsonstream.py`` reads JSON file by file,
and ``tests/support/writers.py`` (with ``writers_a.py`` and ``writers_c.py``),
outside the package, writes every format back.

The stable surface the pipeline uses:

- ``parse_report(raw, limits=..., roots=...) -> Report`` raises a
  ``ReportError`` subclass with a readable message for anything it cannot
  read (a report naming no file included), and nothing else; what it
  forgave is in ``Report.warnings``, the bad records it skipped in
  ``Report.skipped`` (``skipped.py``). ``roots`` (optional) are absolute repository-root
  directories used to make absolute paths repository-relative.
- ``Report.merge``, ``Report.totals``,
  ``codec.dump`` / ``codec.load`` (the intermediate form kept in Redis),
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
