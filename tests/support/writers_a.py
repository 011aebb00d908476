"""Writers of the formats Codecov reads that came with issue 40's second
part (Coveralls, covr, Scala JSON, ...), joined to the registry of
``tests.support.writers`` (``WRITERS``, ``RUN_FORMATS``) there.

Each writes a plain run (``{path: {line: (hits, taken)}}``), as the format's
own tool writes that coverage. Formats without branches drop ``taken``
(``LINE_FORMATS``: the property tests give them runs without branches).
``FUZZ`` is what the fuzz test splices into each: (its name in errors,
fixture globs, tokens).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.support.writers import Run


def _run(run: Any) -> Run:
    from app.coverage.model import Report
    from tests.support.writers import as_run

    return as_run(run) if isinstance(run, Report) else run  # type: ignore[no-any-return]


def _counts(lines: dict[int, tuple[int, Any]], first: int) -> list[int | None]:
    size = max(lines, default=0) + 1 - first
    out: list[int | None] = [None] * size
    for ln, (hits, _) in lines.items():
        out[ln - first] = hits
    return out


def coveralls(run: Any) -> bytes:
    """coveralls-python's job: ``coverage`` from line 1, ``branches`` as
    ``[line, block, branch, hits]``."""
    files = []
    for path, lines in _run(run).items():
        flat: list[int] = []
        for ln, (_, taken) in sorted(lines.items()):
            for i, t in enumerate(taken or ()):
                flat += [ln, 0, i, t]
        entry = {"name": path, "source_digest": "0" * 32, "coverage": _counts(lines, 1)}
        if flat:
            entry["branches"] = flat
        files.append(entry)
    return json.dumps({"source_files": files, "service_name": "github"}).encode()


def covr(run: Any) -> bytes:
    """``covr:::to_codecov``: ``coverage[0]`` is line 0 (``null``), ``uploader`` last."""
    files = [{"name": path, "coverage": _counts(lines, 0)} for path, lines in _run(run).items()]
    return json.dumps({"files": files, "uploader": "R"}).encode()


def scala_json(run: Any) -> bytes:
    reports = [
        {"filename": path, "coverage": {str(ln): hits for ln, (hits, _) in sorted(lines.items())}}
        for path, lines in _run(run).items()
    ]
    return json.dumps({"fileReports": reports}).encode()


WRITERS_A: dict[str, Callable[[Any], bytes]] = {
    "coveralls": coveralls,
    "covr": covr,
    "scala_json": scala_json,
}
#: The formats that say no branches.
LINE_FORMATS = ("covr", "scala_json")

FUZZ: dict[str, tuple[str, list[str], list[bytes]]] = {
    "coveralls": ("Coveralls JSON", ["coveralls/run-*[!e].json"],
                  [b'"source_files": ', b'"coverage": ', b'"branches": ', b'"name": ', b"null",
                   b'"[1, null]"', b"[1, 0, 0, 1]"]),
    "covr": ("covr JSON", [], [b'"uploader": "R"', b'"files": ', b'"coverage": ', b"null"]),
    "scala_json": ("Scala JSON", [], [b'"fileReports": ', b'"coverage": ', b'"1": ', b'"x": ']),
}  # fmt: skip
