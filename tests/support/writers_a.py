"""Writers of Coveralls, covr and Scala JSON, llvm-cov show, luacov,
dotCover, scoverage and xccoverage, joined to the registry of
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


def _llvm_count(n: int) -> str:
    """llvm-cov's ``formatCount``: three digits and a suffix from 1,000 on."""
    digits = str(n)
    if len(digits) <= 3:
        return digits
    head = len(digits) % 3 or 3
    shown = digits[:head] + ("." + digits[head:3] if head != 3 else "")
    return shown + " kMGTPE"[(len(digits) - 1) // 3]


def llvm_show(run: Any) -> bytes:
    """``llvm-cov show -show-branches=count`` of several files: each file's path
    line, ``N|count|source``, a line's branch pairs in a box under it."""
    out = []
    for path, lines in _run(run).items():
        out.append(f"{path}:")
        for ln in range(1, max(lines, default=0) + 1):
            if ln not in lines:
                out.append(f"{ln:>5}|       |")
                continue
            hits, taken = lines[ln]
            out.append(f"{ln:>5}|{_llvm_count(hits):>7}|    step({ln});")
            if taken:
                out.append("  ------------------")
                for i in range(0, len(taken), 2):
                    out.append(
                        f"  |  Branch ({ln}:{i + 5}): [True: {taken[i]}, False: {taken[i + 1]}]"
                    )
                out.append("  ------------------")
        out.append("")
    return "\n".join(out).encode()


def luacov(run: Any) -> bytes:
    """luacov's default report: a count column as wide as the largest count
    plus one, ``*``s and ``0`` for a miss, blanks for lines that are not code."""
    run = _run(run)
    width = len(str(max((h for lines in run.values() for h, _ in lines.values()), default=0)))
    rule = "=" * 78
    out = []
    for path, lines in run.items():
        out += [rule, path, rule]
        for ln in range(1, max(lines, default=0) + 1):
            if ln not in lines:
                out.append(" " * (width + 1) + " -- not code")
                continue
            hits = lines[ln][0]
            field = f"{hits:>{width + 1}}" if hits else "*" * width + "0"
            out.append(f"{field} step({ln})")
        out.append("")
    out += [rule, "Summary", rule, "", "File Hits Missed Coverage"]
    return ("\n".join(out) + "\n").encode()


def dotcover(run: Any) -> bytes:
    """dotCover's DetailedXML: one statement per line, ``Covered`` (no counts)."""
    from xml.sax.saxutils import quoteattr

    run = _run(run)
    index = {path: i + 1 for i, path in enumerate(run)}
    out = [
        '<?xml version="1.0" encoding="utf-8"?>',
        '<Root ReportType="DetailedXml" DotCoverVersion="2023.3.2">',
        "<FileIndices>",
    ]
    out += [f'<File Index="{i}" Name={quoteattr(path)} />' for path, i in index.items()]
    out.append('</FileIndices><Assembly Name="A"><Namespace Name="N"><Type Name="T">')
    for path, lines in run.items():
        out.append('<Method Name="M():void">')
        for ln, (hits, _) in sorted(lines.items()):
            out.append(
                f'<Statement FileIndex="{index[path]}" Line="{ln}" Column="9" EndLine="{ln}" '
                f'EndColumn="20" Covered="{"True" if hits else "False"}" />'
            )
        out.append("</Method>")
    out.append("</Type></Namespace></Assembly></Root>")
    return "\n".join(out).encode()


def scoverage(run: Any) -> bytes:
    """sbt-scoverage's ``scoverage.xml``: a statement per line with its count,
    and a branch statement per branch (an arm that ran ``t`` times)."""
    from xml.sax.saxutils import quoteattr

    out = [
        '<?xml version="1.0" encoding="utf-8"?>',
        '<scoverage statement-count="0" version="1.0"><packages><package name="p"><classes>',
    ]
    for path, lines in _run(run).items():
        out.append(
            f'<class name="C" filename={quoteattr(path)}><methods><method name="m"><statements>'
        )
        start = 0
        for ln, (hits, taken) in sorted(lines.items()):
            for count, branch in [(hits, "false")] + [(t, "true") for t in taken or ()]:
                start += 10
                out.append(
                    f'<statement source={quoteattr(path)} method="m" start="{start}" '
                    f'end="{start + 5}" line="{ln}" branch="{branch}" '
                    f'invocation-count="{count}" ignored="false"></statement>'
                )
        out.append("</statements></method></methods></class>")
    out.append("</classes></package></packages></scoverage>")
    return "\n".join(out).encode()  # fmt: skip


def xccoverage(run: Any, *, binary: bool = False) -> bytes:
    """Xcode's coverage archive (``NSKeyedArchiver``) as ``plutil -convert xml1``
    writes it (``{"CF$UID": n}`` references), or as a binary plist: a target,
    its source files, one line object per source line (``x`` false: not code)."""
    import plistlib

    objects: list[Any] = ["$null"]

    def add(obj: Any) -> Any:
        objects.append(obj)
        return plistlib.UID(len(objects) - 1) if binary else {"CF$UID": len(objects) - 1}

    null = plistlib.UID(0) if binary else {"CF$UID": 0}
    line_class = add({"$classname": "IDESchemeActionCodeCoverageLine"})
    array_class = add({"$classname": "NSArray", "$classes": ["NSArray", "NSObject"]})
    files = []
    for path, lines in _run(run).items():
        refs = [
            add(
                {
                    "$class": line_class,
                    "x": ln in lines,
                    "c": lines[ln][0] if ln in lines else 0,
                    "s": null,
                }
            )
            for ln in range(1, max(lines, default=0) + 1)
        ]
        lines_ref = add({"$class": array_class, "NS.objects": refs})
        files.append(add({"documentLocation": add(path), "lines": lines_ref}))
    target = add({"name": "Calc", "sourceFiles": add({"$class": array_class, "NS.objects": files})})
    root = add({"targets": add({"$class": array_class, "NS.objects": [target]})})
    doc = {
        "$archiver": "NSKeyedArchiver",
        "$version": 100000,
        "$objects": objects,
        "$top": {"root": root},
    }
    return plistlib.dumps(doc, fmt=plistlib.FMT_BINARY if binary else plistlib.FMT_XML)  # fmt: skip


WRITERS_A: dict[str, Callable[[Any], bytes]] = {
    "coveralls": coveralls,
    "covr": covr,
    "scala_json": scala_json,
    "llvm_show": llvm_show,
    "luacov": luacov,
    "dotcover": dotcover,
    "scoverage": scoverage,
    "xccoverage": xccoverage,
}
#: The formats that say no branches.
LINE_FORMATS = ("covr", "scala_json", "luacov", "dotcover", "xccoverage")
#: The formats whose branches run only on lines that run (a branch is a statement).
CONSISTENT_FORMATS = ("scoverage",)

FUZZ: dict[str, tuple[str, list[str], list[bytes]]] = {
    "coveralls": ("Coveralls JSON", ["coveralls/run-*[!e].json"],
                  [b'"source_files": ', b'"coverage": ', b'"branches": ', b'"name": ', b"null",
                   b'"[1, null]"', b"[1, 0, 0, 1]"]),
    "covr": ("covr JSON", ["covr/codecov.json"],
             [b'"uploader": "R"', b'"files": ', b'"coverage": ', b"null"]),
    "scala_json": ("Scala JSON", [], [b'"fileReports": ', b'"coverage": ', b'"1": ', b'"x": ']),
    "llvm_show": ("llvm-cov show text", ["llvmshow/*.coverage.txt"],
                  [b"  ------------------\n", b"  |  Branch (3:9): [True: 1, False: 0]", b"|",
                   b"1.23k", b"/src/a.c:\n", b"\n:\n", b"\x1b[0;41m",
                   b"  |  |  |  Branch (1:2): [True: 0, False: 2]"]),
    "luacov": ("luacov", ["luacov/*.report.out"],
               [b"=" * 78 + b"\n", b"Summary\n", b"***0 ", b"   1 ", b"*0", b"\n\n", b"12345678 "]),
    "dotcover": ("dotCover XML", [],
                 [b"<Statement ", b'FileIndex="1" ', b'Line="', b'EndLine="', b'Covered="True" ',
                  b'<File Index="1" Name="a.cs" />', b"</", b'<!DOCTYPE x [<!ENTITY e "e">]>']),
    "scoverage": ("scoverage XML", [],
                  [b"<statement ", b'line="', b'invocation-count="', b'branch="true" ',
                   b'ignored="true" ', b"<statements><statement><line>3</line><count>1</count>"
                   b"<source>a.scala</source></statement>", b"</", b'source="a.scala" ']),
    "xccoverage": ("xccoverage plist", [],
                   [b"<key>CF$UID</key>", b"<integer>", b"<true/>", b"<false/>", b"<key>c</key>",
                    b"<key>lines</key>", b"<dict>", b"</", b"<integer>-1</integer>"]),
}  # fmt: skip
