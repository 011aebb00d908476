"""Writers: a Report back into each format's text.

Used by the property tests (parse(write(model)) == model), the benchmarks
(realistic synthetic reports of any size) and, later, the fuzzers' seeds.
Each writer emits what the real tools emit for the same model, as far as
the format can say it: Cobertura and JaCoCo only know branch counts,
coverage.py only knows ran / not run, Go only knows blocks.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from xml.sax.saxutils import quoteattr

from app.coverage.model import Branches, Report


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
