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
from xml.sax.saxutils import quoteattr

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


def v1_says(run: Run) -> Run:
    """A branch line's hits are 1 when a branch was taken, else 0 (``"n/m"``)."""
    return {p: {ln: ((1 if any(t) else 0, t) if t else (h, None)) for ln, (h, t) in lines.items()}
            for p, lines in run.items()}  # fmt: skip


def codecov_v1(run: Any) -> bytes:
    """Codecov's v1 JSON: hits by line, ``"n/m"`` on a branch line; the files
    alternate the object, list and ``{"lines": [...]}`` shapes."""
    coverage: dict[str, Any] = {}
    for i, (path, lines) in enumerate(_run(run).items()):
        said = {ln: (f"{sum(1 for x in t if x)}/{len(t)}" if t else h)
                for ln, (h, t) in sorted(lines.items())}  # fmt: skip
        top = max(said, default=0)
        if i % 3 == 1:
            coverage[path] = [said.get(ln) for ln in range(top + 1)]
        elif i % 3 == 2:
            coverage[path] = {"lines": [said.get(ln) for ln in range(1, top + 1)]}
        else:
            coverage[path] = {str(ln): v for ln, v in said.items()}
    return json.dumps({"coverage": coverage, "messages": {}}).encode()


def salesforce(run: Any) -> bytes:
    """The Salesforce CLI's ``test-result-codecoverage.json``."""
    doc = []
    for i, (path, lines) in enumerate(_run(run).items()):
        said = {str(ln): h for ln, (h, _) in sorted(lines.items())}
        covered = sum(1 for h in said.values() if h)
        doc.append({"id": f"01p{i:015d}", "name": path, "totalLines": len(said),
                    "lines": said, "totalCovered": covered,
                    "coveredPercent": 100 * covered // max(len(said), 1)})  # fmt: skip
    return json.dumps(doc).encode()


def gap(run: Any) -> bytes:
    """GAP's ``OutputJsonCoverage`` lines: E for a line run, R for one only read."""
    out = []
    for fid, (path, lines) in enumerate(_run(run).items(), start=1):
        out.append(json.dumps({"Type": "S", "File": path, "FileId": fid}, separators=(",", ":")))
        for ln, (h, _) in sorted(lines.items()):
            out.append(f'{{"Type":"{"E" if h else "R"}","Line":{ln},"FileId":{fid}}}')
    return ("\n".join(out) + "\n").encode()


def elm(run: Any) -> bytes:
    """elm-coverage's JSON: an expression per line, counted."""
    data, modules = {}, {}
    for i, (path, lines) in enumerate(_run(run).items()):
        module = f"Module{i}"
        modules[module] = path
        data[module] = [{"type": "expression", "count": h,
                         "from": {"line": ln, "column": 5}, "to": {"line": ln, "column": 30}}
                        for ln, (h, _) in sorted(lines.items())]  # fmt: skip
    return json.dumps({"coverageData": data, "moduleMap": modules}).encode()


def dlst(run: Any) -> bytes:
    """``ldc2 -cov`` listings, one per file, one after another."""
    out = []
    for path, lines in _run(run).items():
        for ln in range(1, max(lines, default=0) + 1):
            hits = lines[ln][0] if ln in lines else None
            count = "" if hits is None else f"{hits:07d}" if hits == 0 else str(hits)
            out.append(f"{count:>7}|    step({ln});")
        covered = sum(1 for h, _ in lines.values() if h)
        out.append(f"{path} is {100 * covered // max(len(lines), 1)}% covered")
    return ("\n".join(out) + "\n").encode()


def bullseye_says(run: Run) -> Run:
    """A line ran (1) or not; a line with a taken branch ran."""
    return {p: {ln: (1 if h or any(t or ()) else 0, t) for ln, (h, t) in lines.items()}
            for p, lines in run.items()}  # fmt: skip


_EVENTS = {(True, True): "full", (True, False): "true", (False, True): "false"}


def bullseye(run: Any) -> bytes:
    """covxml -b: a block per line, a decision probe per pair of branches;
    files in a folder named by their directory."""
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           '<BullseyeCoverage name="t.cov" dir="/b/" buildId="1_2020-10-28_17:55:47" '
           'version="6" xmlns="https://www.bullseye.com/covxml">']  # fmt: skip
    for path, lines in _run(run).items():
        folder, _, name = path.rpartition("/")
        out.append(f"<folder name={quoteattr(folder)}>" if folder else "")
        out.append(f'<src name={quoteattr(name)}><fn name="f">')
        for ln, (h, t) in sorted(lines.items()):
            out.append(f'<block line="{ln}" entered="{1 if h else 0}"/>')
            for a, b in zip((t or ())[::2], (t or ())[1::2], strict=True):
                event = _EVENTS.get((a > 0, b > 0), "none")
                out.append(f'<probe line="{ln}" column="5" kind="decision" event="{event}"/>')
        out.append("</fn></src>" + ("</folder>" if folder else ""))
    out.append("</BullseyeCoverage>")
    return "\n".join(out).encode()


def visualstudio(run: Any) -> bytes:
    """``dotnet-coverage``'s XML: a range per line, source files after them."""
    out = ['<?xml version="1.0" encoding="utf-8"?>', "<results><modules>",
           '<module name="app.dll" path="app.dll" id="1"><functions>']  # fmt: skip
    run = _run(run)
    for sid, (_, lines) in enumerate(run.items()):
        out.append(f'<function id="{sid}" name="F{sid}" type_name="T"><ranges>')
        for ln, (h, _) in sorted(lines.items()):
            state = "yes" if h else "no"
            out.append(f'<range source_id="{sid}" covered="{state}" start_line="{ln}" '
                       f'start_column="9" end_line="{ln}" end_column="30"/>')  # fmt: skip
        out.append("</ranges></function>")
    out.append("</functions><source_files>")
    for sid, path in enumerate(run):
        windows = path.replace("/", "\\")
        out.append(f'<source_file id="{sid}" path={quoteattr(windows)} checksum_type="SHA256"/>')
    out.append("</source_files></module></modules></results>")
    return "\n".join(out).encode()


def mono(run: Any) -> bytes:
    """monocov's XML: a method per file, a statement per line."""
    out = ['<?xml version="1.0" encoding="utf-8"?>', '<coverage version="0.3">',
           '<assembly name="App" guid="0" filename="App.dll"/>',
           '<class name="App.C" assembly="App">']  # fmt: skip
    for i, (path, lines) in enumerate(_run(run).items()):
        out.append(f'<method name="M{i}" class="App.C" token="{i}" filename={quoteattr(path)}>')
        for ln, (h, _) in sorted(lines.items()):
            out.append(f'<statement line="{ln}" column="9" counter="{h}"/>')
        out.append("</method>")
    out.append("</class></coverage>")
    return "\n".join(out).encode()


#: Format name -> writer (the names the fuzz and property tests use).
WRITERS_C: dict[str, Callable[[Any], bytes]] = {
    "flow": flow,
    "codecov_v1": codecov_v1,
    "salesforce": salesforce,
    "gap": gap,
    "elm": elm,
    "dlst": dlst,
    "bullseye": bullseye,
    "visualstudio": visualstudio,
    "mono": mono,
}
#: What of a run each format can say.
SAYS: dict[str, Callable[[Run], Run]] = {
    "flow": ran_or_not,
    "codecov_v1": v1_says,
    "salesforce": lines_only,
    "gap": ran_or_not,
    "elm": lines_only,
    "dlst": lines_only,
    "bullseye": bullseye_says,
    "visualstudio": ran_or_not,
    "mono": lines_only,
}
RUN_FORMATS_C = tuple(WRITERS_C)
