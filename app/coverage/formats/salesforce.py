"""Salesforce Apex code coverage JSON (``sf apex run test --code-coverage
--result-format json``, ``sfdx force:apex:test:run -c -r json``: the
``test-result-codecoverage.json`` the Salesforce CLI writes).

Shape::

    [{"id": "01p...", "name": "AccountService", "totalLines": 12,
      "lines": {"3": 1, "4": 0, "7": 2}, "totalCovered": 2, "coveredPercent": 67}]

Each class's ``lines`` maps a line number to its hits. As Codecov reads it
(its worker's ``services/report/languages/salesforce.py``), the file is the
class's ``name``, with ``.cls`` added when it has no extension (the CLI
names Apex classes and triggers without one). An entry without a name or
with no lines adds nothing; a line that is not a whole number above 0, or
hits that are not a whole number, is skipped and named.
"""

from __future__ import annotations

import json
from typing import Any

from app.coverage import jsonstream as js
from app.coverage.formats.linemap import LineMap, whole
from app.coverage.limits import ParseLimits
from app.coverage.model import FileCoverage, Report

FMT = "Salesforce Apex JSON"


def parse(raw: bytes, limits: ParseLimits, roots: tuple[str, ...] = ()) -> Report:
    return js.run(raw, FMT, lambda text: _parse(text, limits, roots))


def _parse(text: str, limits: ParseLimits, roots: tuple[str, ...]) -> Report:
    doc = json.loads(text)
    if not isinstance(doc, list):
        raise js.Bad("a Salesforce coverage report is a list of classes")
    out = LineMap(FMT, limits, roots)
    for i, entry in enumerate(doc):
        name = entry.get("name") if isinstance(entry, dict) else None
        lines = entry.get("lines") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not isinstance(lines, dict):
            out.report.skipped.add(str(entry)[:80], f"entry {i}")
            continue
        if not name.strip() or not lines:
            continue
        fc = out.file(name if "." in name else f"{name}.cls")

        def other(key: Any, hits: Any, fc: FileCoverage = fc, name: str = name) -> None:
            out.hit(fc, whole(key), whole(hits), f"{key}: {hits}", f"{name!r} line {key[:20]}")

        out.counts(fc, lines.items(), other)
    return out.done()
