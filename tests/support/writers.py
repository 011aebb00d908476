"""Writers of every coverage format, one registry: ``WRITERS[name](report)``.

The property tests (parse what a writer wrote, get back what was written),
the fuzz test's seeds and the parse benchmark (``benchmarks/parse_throughput.py``)
all take their reports from here. Each writer emits what the format's own tool
emits for the same coverage, as far as the format can say it: Cobertura and
JaCoCo know only branch counts, coverage.py only ran / not run, Go only blocks.
Test and benchmark code only: covworker never writes these formats.

The five older formats are written from a model (:class:`Report`, branch ids
of the format's own scheme). The seven newer ones are written from a plain
description of a run, ``{path: {line: (hits, taken)}}`` where ``taken`` is
``None`` (no branches) or a tuple of per-branch counts; given a model instead,
they write :func:`as_run` of it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from xml.sax.saxutils import quoteattr

from app.coverage.model import Branches, Report

Run = dict[str, dict[int, tuple[int, tuple[int, ...] | None]]]


def as_run(report: Report) -> Run:
    """The plain run of a model: two branches per branch line, as many taken
    as the model says were covered."""
    run: Run = {}
    for path, fc in report.files.items():
        lines: dict[int, tuple[int, tuple[int, ...] | None]] = {}
        for ln, hits in fc.lines.items():
            br = fc.branches.get(ln)
            taken = None if br is None else tuple(1 if i < br.covered else 0 for i in range(2))
            lines[ln] = (hits, taken)
        run[path] = lines
    return run


def istanbul(run: Run | Report) -> bytes:
    run = as_run(run) if isinstance(run, Report) else run
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


def clover(run: Run | Report) -> bytes:
    run = as_run(run) if isinstance(run, Report) else run
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


def simplecov(run: Run | Report) -> bytes:
    run = as_run(run) if isinstance(run, Report) else run
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


def llvm(run: Run | Report) -> bytes:
    run = as_run(run) if isinstance(run, Report) else run
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


def gcov(run: Run | Report) -> bytes:
    run = as_run(run) if isinstance(run, Report) else run
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


def gcov_text(run: Run | Report) -> bytes:
    """``gcov -b``'s listings, one per file, one after another (as Codecov's
    uploaders concatenate them): ``#####`` for a line not run, ``taken N``
    per branch, ``never executed`` when neither the line nor it ran."""
    run = as_run(run) if isinstance(run, Report) else run
    out = []
    for path, lines in run.items():
        out += [f"        -:    0:Source:{path}", "        -:    0:Runs:1"]
        for ln, (hits, taken) in sorted(lines.items()):
            out.append(f"{hits or '#####':>9}:{ln:>5}:    step({ln});")
            for i, t in enumerate(taken or ()):
                fall = " (fallthrough)" if i == 0 else ""
                out.append(
                    f"branch {i:>2} taken {t}{fall}"
                    if hits or t
                    else f"branch {i:>2} never executed"
                )
    return ("\n".join(out) + "\n").encode()


def opencover(run: Run | Report) -> bytes:
    run = as_run(run) if isinstance(run, Report) else run
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


# -- the five older formats, written from a model ----------------------------


def _sorted_files(report: Report) -> Iterator[tuple[str, dict[int, int], dict[int, Branches]]]:
    for path in sorted(report.files):
        fc = report.files[path]
        yield path, fc.lines, fc.branches


def _ids(ids: frozenset[str] | None, scheme: str) -> list[str]:
    prefix = scheme + ":"
    return sorted(i[len(prefix) :] for i in ids or () if i.startswith(prefix))


def to_lcov(report: Report, *, test_name: str = "") -> bytes:
    """LCOV with DA, BRDA (identity branches of scheme ``lcov``) and summaries."""
    out: list[str] = []
    for path, lines, branches in _sorted_files(report):
        out.append(f"TN:{test_name}")
        out.append(f"SF:{path}")
        brf = brh = 0
        for ln in sorted(branches):
            br = branches[ln]
            covered = set(_ids(br.covered_ids, "lcov"))
            for ident in _ids(br.all_ids, "lcov"):
                out.append(f"BRDA:{ln},{ident},{1 if ident in covered else '-'}")
                brf += 1
                brh += ident in covered
        for ln in sorted(lines):
            out.append(f"DA:{ln},{lines[ln]}")
        out.append(f"BRF:{brf}\nBRH:{brh}")
        out.append(f"LF:{len(lines)}\nLH:{sum(1 for h in lines.values() if h)}")
        out.append("end_of_record")
    return ("\n".join(out) + "\n").encode()


def to_coverage_json(report: Report) -> bytes:
    """coverage.py JSON (format 3): executed / missing lines and arcs (scheme ``arc``)."""
    files: dict[str, object] = {}
    for path, lines, branches in _sorted_files(report):
        executed_branches: list[list[int]] = []
        missing_branches: list[list[int]] = []
        for ln in sorted(branches):
            br = branches[ln]
            covered = set(_ids(br.covered_ids, "arc"))
            for ident in _ids(br.all_ids, "arc"):
                target = executed_branches if ident in covered else missing_branches
                target.append([ln, int(ident)])
        files[path] = {
            "executed_lines": sorted(ln for ln, h in lines.items() if h),
            "summary": {"num_statements": len(lines)},
            "missing_lines": sorted(ln for ln, h in lines.items() if not h),
            "excluded_lines": [],
            "executed_branches": executed_branches,
            "missing_branches": missing_branches,
        }
    meta = {"format": 3, "version": "7.6.1", "branch_coverage": True, "show_contexts": False}
    return json.dumps({"meta": meta, "files": files, "totals": {}}, indent=1).encode()


def to_go(report: Report, *, mode: str = "count") -> bytes:
    """Go coverprofile: each line becomes a one-line block; branch ids (scheme
    ``go``) become the blocks they name, with the line's hits if covered."""
    out = [f"mode: {mode}"]
    for path, lines, branches in _sorted_files(report):
        for ln in sorted(lines):
            br = branches.get(ln)
            if br is None or not br.all_ids:
                out.append(f"{path}:{ln}.1,{ln}.80 1 {lines[ln]}")
                continue
            covered = set(_ids(br.covered_ids, "go"))
            for ident in _ids(br.all_ids, "go"):
                out.append(f"{path}:{ident} 1 {lines[ln] if ident in covered else 0}")
    return ("\n".join(out) + "\n").encode()


def to_cobertura(report: Report, *, source: str = "/build/src") -> bytes:
    """Cobertura XML as coverage.py writes it (one class per file, count-only branches)."""
    out = [
        '<?xml version="1.0" ?>',
        '<coverage version="7.6.1" timestamp="0" lines-valid="0" lines-covered="0"'
        ' line-rate="0" branches-covered="0" branches-valid="0" branch-rate="0" complexity="0">',
        f"\t<sources>\n\t\t<source>{source}</source>\n\t</sources>",
        "\t<packages>",
    ]
    for path, lines, branches in _sorted_files(report):
        package = path.rpartition("/")[0].replace("/", ".") or "."
        out.append(f'\t\t<package name="{package}" line-rate="0" branch-rate="0" complexity="0">')
        out.append("\t\t\t<classes>")
        name = quoteattr(path.rpartition("/")[2])
        out.append(
            f'\t\t\t\t<class name={name} filename={quoteattr(path)} complexity="0"'
            ' line-rate="0" branch-rate="0">'
        )
        out.append("\t\t\t\t\t<methods/>\n\t\t\t\t\t<lines>")
        for ln in sorted(lines):
            br = branches.get(ln)
            if br is not None and br.total:
                pct = 100 * br.covered // br.total
                out.append(
                    f'\t\t\t\t\t\t<line number="{ln}" hits="{lines[ln]}" branch="true"'
                    f' condition-coverage="{pct}% ({br.covered}/{br.total})"/>'
                )
            else:
                out.append(f'\t\t\t\t\t\t<line number="{ln}" hits="{lines[ln]}"/>')
        out.append("\t\t\t\t\t</lines>\n\t\t\t\t</class>\n\t\t\t</classes>\n\t\t</package>")
    out.append("\t</packages>\n</coverage>")
    return ("\n".join(out) + "\n").encode()


def to_jacoco(report: Report) -> bytes:
    """JaCoCo XML: files grouped by directory into packages; 1 hit = ci > 0.

    Like JaCoCo, each source file also gets a ``<class>`` with a ``<method>``
    per ten lines and their ``<counter>`` elements, which parsers must skip.
    """
    out = [
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        '<!DOCTYPE report PUBLIC "-//JACOCO//DTD Report 1.1//EN" "report.dtd">'
        '<report name="synthetic"><sessioninfo id="s" start="0" dump="0"/>'
    ]
    counters = "".join(
        f'<counter type="{kind}" missed="1" covered="1"/>'
        for kind in ("INSTRUCTION", "BRANCH", "LINE", "COMPLEXITY", "METHOD")
    )
    packages: dict[str, list[str]] = {}
    for path in sorted(report.files):
        directory, _, name = path.rpartition("/")
        packages.setdefault(directory, []).append(name)
    for directory, names in packages.items():
        out.append(f"<package name={quoteattr(directory)}>")
        for name in names:
            fc = report.files[f"{directory}/{name}" if directory else name]
            stem = name.rpartition(".")[0] or name
            out.append(
                f"<class name={quoteattr(directory + '/' + stem)} sourcefilename={quoteattr(name)}>"
            )
            for i, ln in enumerate(sorted(fc.lines)[::10]):
                out.append(f'<method name="m{i}" desc="()V" line="{ln}">{counters}</method>')
            out.append(f"{counters}</class><sourcefile name={quoteattr(name)}>")
            for ln in sorted(fc.lines):
                hits = fc.lines[ln]
                br = fc.branches.get(ln)
                mb, cb = (br.total - br.covered, br.covered) if br is not None else (0, 0)
                mi, ci = (0, 3) if hits else (3, 0)
                out.append(f'<line nr="{ln}" mi="{mi}" ci="{ci}" mb="{mb}" cb="{cb}"/>')
            out.append(f"{counters}</sourcefile>")
        out.append(f"{counters}</package>")
    out.append(f"{counters}</report>")
    return "\n".join(out).encode()


#: Format name -> writer of a report in that format. The names are the ones
#: the fuzz and property tests are parametrised by.
WRITERS: dict[str, Callable[[Report], bytes]] = {
    "lcov": to_lcov,
    "cobertura": to_cobertura,
    "coverage_json": to_coverage_json,
    "go": to_go,
    "jacoco": to_jacoco,
    "istanbul": istanbul,
    "clover": clover,
    "simplecov": simplecov,
    "llvm": llvm,
    "gcov": gcov,
    "opencover": opencover,
    "gcov_text": gcov_text,
}
#: The formats whose writers also take a plain :data:`Run`.
RUN_FORMATS = ("istanbul", "clover", "simplecov", "llvm", "gcov", "opencover", "gcov_text")

from tests.support.writers_a import WRITERS_A  # noqa: E402

WRITERS.update(WRITERS_A)
RUN_FORMATS += tuple(WRITERS_A)

from tests.support.writers_c import RUN_FORMATS_C, WRITERS_C  # noqa: E402

WRITERS |= WRITERS_C
RUN_FORMATS += RUN_FORMATS_C
