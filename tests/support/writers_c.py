"""Writers of Flow, Codecov's v1 JSON, Bullseye, Visual Studio, Salesforce,
GAP, Elm, dlst and Mono reports (``WRITERS_C``, joined into
``tests.support.writers.WRITERS``), from a plain run (:data:`Run`) or a model.

Each writes what the format's tool writes for the run, as far as the format
can say it: ``SAYS[name](run)`` is the part of a run the format can say
(Flow and Bullseye only ran / not run, most no branches), which the property
tests give the writer and expect back. Given more, a writer drops the rest.
Test and benchmark code only: covworker never writes these formats.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

Run = dict[str, dict[int, tuple[int, tuple[int, ...] | None]]]


def _run(run: Any) -> Run:
    if isinstance(run, dict):
        return run
    from tests.support.writers import as_run

    return as_run(run)


def lines_only(run: Run) -> Run:
    """The run without its branches."""
    return {p: {ln: (h, None) for ln, (h, _) in lines.items()} for p, lines in run.items()}


def ran_or_not(run: Run) -> Run:
    """The run as 1 (ran) or 0, without its branches."""
    return {p: {ln: (min(h, 1), None) for ln, (h, _) in lines.items()} for p, lines in run.items()}


def _loc(ln: int, col: int) -> dict[str, Any]:
    return {"start": {"line": ln, "column": col, "offset": 0},
            "end": {"line": ln, "column": col + 4, "offset": 0}, "type": "SourceFile"}  # fmt: skip


def flow(run: Any) -> bytes:
    """flow-coverage-report's JSON: a covered expression per line that ran,
    an uncovered one per line that did not."""
    files = {}
    for path, lines in _run(run).items():
        covered = [_loc(ln, 3) for ln, (h, _) in sorted(lines.items()) if h]
        uncovered = [_loc(ln, 3) for ln, (h, _) in sorted(lines.items()) if not h]
        files[path] = {"filename": path, "annotation": "flow", "isFlow": True,
                       "expressions": {"covered_count": len(covered), "covered_locs": covered,
                                       "uncovered_count": len(uncovered),
                                       "uncovered_locs": uncovered,
                                       "empty_count": 0, "empty_locs": []}}  # fmt: skip
    doc = {"threshold": 80, "flowStatus": {"errors": [], "passed": True}, "files": files}
    return json.dumps(doc).encode()


#: Format name -> writer (the names the fuzz and property tests use).
WRITERS_C: dict[str, Callable[[Any], bytes]] = {
    "flow": flow,
}
#: What of a run each format can say.
SAYS: dict[str, Callable[[Run], Run]] = {
    "flow": ran_or_not,
}
RUN_FORMATS_C = tuple(WRITERS_C)
