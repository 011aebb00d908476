"""Writers of the six newer formats, for property tests, fuzz seeds and benchmarks.

Each takes a plain description of a run, ``{path: {line: (hits, taken)}}``
where ``taken`` is ``None`` (no branches) or a tuple of per-branch counts,
and writes it as the format's own tool would. Test and benchmark code only:
covworker never writes these formats.
"""

from __future__ import annotations

import json
from xml.sax.saxutils import quoteattr

Run = dict[str, dict[int, tuple[int, tuple[int, ...] | None]]]


def istanbul(run: Run) -> bytes:
    out = {}
    for path, lines in run.items():
        smap, s, bmap, b = {}, {}, {}, {}
        for i, (ln, (hits, taken)) in enumerate(sorted(lines.items())):
            smap[str(i)] = {"start": {"line": ln, "column": 0}, "end": {"line": ln, "column": 9}}
            s[str(i)] = hits
            if taken:
                loc = {"start": {"line": ln, "column": 0}, "end": {"line": ln, "column": 9}}
                bmap[str(i)] = {
                    "loc": loc,
                    "type": "if",
                    "locations": [loc] * len(taken),
                    "line": ln,
                }
                b[str(i)] = list(taken)
        out[path] = {
            "path": path, "statementMap": smap, "s": s, "branchMap": bmap, "b": b,
            "fnMap": {}, "f": {},
        }  # fmt: skip
    return json.dumps(out).encode()


def clover(run: Run) -> bytes:
    parts = ['<?xml version="1.0" encoding="UTF-8"?>\n<coverage generated="1" clover="3.2.0">']
    parts.append('<project timestamp="1" name="All files">')
    for path, lines in run.items():
        parts.append(f"<file name={quoteattr(path.rpartition('/')[2])} path={quoteattr(path)}>")
        for ln, (hits, taken) in sorted(lines.items()):
            if taken:
                yes = sum(1 for t in taken if t)
                parts.append(
                    f'<line num="{ln}" count="{hits}" type="cond" truecount="{yes}" '
                    f'falsecount="{len(taken) - yes}"/>'
                )
            else:
                parts.append(f'<line num="{ln}" count="{hits}" type="stmt"/>')
        parts.append("</file>")
    parts.append("</project></coverage>\n")
    return "\n".join(parts).encode()


def simplecov(run: Run) -> bytes:
    coverage = {}
    for path, lines in run.items():
        top = max(lines, default=0)
        counts: list[int | None] = [None] * top
        branches = {}
        n = 0
        for ln, (hits, taken) in sorted(lines.items()):
            counts[ln - 1] = hits
            if taken:
                cond = f"[:if, {n}, {ln}, 0, {ln}, 9]"
                n += 1
                outcomes = {}
                for t in taken:
                    outcomes[f"[:then, {n}, {ln}, 0, {ln}, 9]"] = t
                    n += 1
                branches[cond] = outcomes
        coverage[path] = {"lines": counts, "branches": branches}
    return json.dumps({"RSpec": {"coverage": coverage, "timestamp": 1}}).encode()


def llvm(run: Run) -> bytes:
    files = []
    for path, lines in run.items():
        segments: list[list[object]] = []
        branches = []
        for ln, (hits, taken) in sorted(lines.items()):
            segments += [[ln, 1, hits, True, True, False], [ln, 80, 0, False, False, False]]
            for i in range(0, len(taken or ()), 2):
                pair = (taken or ())[i : i + 2]
                false = pair[1] if len(pair) > 1 else 0
                branches.append([ln, i + 1, ln, i + 2, pair[0], false, 0, 0, 4])
        files.append({"filename": path, "segments": segments, "branches": branches})
    doc = {"type": "llvm.coverage.json.export", "version": "2.0.1",
           "data": [{"files": files, "functions": [], "totals": {}}]}  # fmt: skip
    return json.dumps(doc).encode()


def gcov(run: Run) -> bytes:
    files = []
    for path, lines in run.items():
        entries = [
            {"line_number": ln, "count": hits, "unexecuted_block": hits == 0,
             "branches": [{"count": t, "fallthrough": True, "throw": False} for t in taken or ()]}
            for ln, (hits, taken) in sorted(lines.items())
        ]  # fmt: skip
        files.append({"file": path, "lines": entries, "functions": []})
    doc = {"format_version": "1", "gcc_version": "12.2.0", "files": files,
           "current_working_directory": "/build", "data_file": "a.gcda"}  # fmt: skip
    return json.dumps(doc).encode()


def opencover(run: Run) -> bytes:
    parts = ['<?xml version="1.0" encoding="utf-8"?>\n<CoverageSession><Modules><Module>']
    uids = {path: i + 1 for i, path in enumerate(run)}
    parts.append("<Files>")
    parts += [f'<File uid="{uid}" fullPath={quoteattr(path)}/>' for path, uid in uids.items()]
    parts.append("</Files><Classes><Class><Methods>")
    for path, lines in run.items():
        uid = uids[path]
        parts.append(f'<Method><FileRef uid="{uid}"/><SequencePoints>')
        for ln, (hits, _) in sorted(lines.items()):
            parts.append(f'<SequencePoint vc="{hits}" sl="{ln}" el="{ln}" fileid="{uid}"/>')
        parts.append("</SequencePoints><BranchPoints>")
        for ln, (_, taken) in sorted(lines.items()):
            for i, t in enumerate(taken or ()):
                parts.append(
                    f'<BranchPoint vc="{t}" sl="{ln}" path="{i}" offset="{ln}" '
                    f'offsetend="{ln + i + 1}" fileid="{uid}"/>'
                )
        parts.append("</BranchPoints></Method>")
    parts.append("</Methods></Class></Classes></Module></Modules></CoverageSession>\n")
    return "\n".join(parts).encode()


WRITERS = {
    "istanbul": istanbul,
    "clover": clover,
    "simplecov": simplecov,
    "llvm": llvm,
    "gcov": gcov,
    "opencover": opencover,
}
