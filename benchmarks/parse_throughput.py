"""Parse and merge throughput of every app.coverage parser side by side, and peak memory.

    python benchmarks/parse_throughput.py                       # print the table
    python benchmarks/parse_throughput.py --write benchmarks/RESULTS-formats.md

Synthetic reports of a realistic shape (files of 50-800 lines, ~15% branch
lines, hits skewed towards 0/1) are written by tests.support.writers and, for
Clover, Istanbul, SimpleCov, llvm-cov, gcov JSON and text and OpenCover, by the
writers the property tests check (tests/support/writers.py); every parser
reads the same synthetic coverage in one run. Rates are line records per
second of CPU time on one core (everything here is single-threaded), best
of --repeat; CPU time, not wall time, because the machines are shared.
Memory is each parser's peak RSS in a fresh subprocess, parsing the same
file; pycobertura runs side by side on the same files. Peak memory is also
measured on the largest real report of each format found in
tests/fixtures/reports and in the public corpus beside the clone
(shared/coverage-corpus), when it is there.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lxml import etree

from app.coverage import Branches, FileCoverage, Report, codec, parse_report
from app.coverage.detect import detect_format
from app.coverage.limits import ParseLimits
from tests.support.writers import (
    RUN_FORMATS,
    WRITERS,
    as_run,
    to_cobertura,
    to_coverage_json,
    to_jacoco,
    to_lcov,
)

TARGETS = {"cobertura": 300_000, "jacoco": 300_000, "lcov": 500_000, "go": 500_000}
TARGETS |= {"coverage.py-json": 500_000, "merge": 1_000_000}
TARGETS |= {"clover": 300_000, "opencover": 300_000}  # XML
TARGETS |= {"istanbul": 500_000, "simplecov": 500_000, "llvm": 500_000, "gcov": 500_000}
TARGETS |= {"gcov_text": 500_000}  # text
TARGETS |= {"coveralls": 500_000, "covr": 500_000, "scala_json": 500_000}  # JSON
TARGETS |= {"llvm_show": 500_000, "luacov": 500_000}  # text
TARGETS |= {"dotcover": 300_000, "scoverage": 300_000, "xccoverage": 300_000}  # XML
TARGETS |= {"flow": 500_000, "codecov_v1": 500_000, "salesforce": 500_000, "gap": 500_000}
TARGETS |= {"elm": 500_000, "dlst": 500_000}
TARGETS |= {"bullseye": 300_000, "visualstudio": 300_000, "mono": 300_000}  # XML
REPO = Path(__file__).resolve().parents[1]
REAL_REPORTS = [REPO / "tests" / "fixtures" / "reports", REPO.parent / "shared" / "coverage-corpus"]
UNLIMITED = ParseLimits(max_bytes=1 << 40, max_files=10**7, max_lines=10**9)


def synthetic(lines: int, seed: int = 1, scheme: str | None = None) -> Report:
    """~``lines`` line records over files of 50-800 lines; ``scheme`` names branch ids."""
    rnd = random.Random(seed)
    report, made, n = Report(), 0, 0
    while made < lines:
        size = min(rnd.randint(50, 800), lines - made)
        fc = FileCoverage()
        for ln in range(1, size + 1):
            fc.lines[ln] = rnd.choice((0, 0, 1, 1, 1, 2, 5, 40))
            if rnd.random() < 0.15:
                if scheme is None:
                    fc.branches[ln] = Branches(rnd.randint(0, 2), 2)
                else:
                    ids = [f"{scheme}:{x}" for x in ("0,0", "0,1") if scheme == "lcov"] or [
                        f"{scheme}:{ln + 1}",
                        f"{scheme}:-1",
                    ]
                    covered = frozenset(i for i in ids if rnd.random() < 0.6)
                    fc.branches[ln] = Branches.from_ids(covered, frozenset(ids))
        report.files[f"src/module{n // 40}/file{n}.py"] = fc
        made += size
        n += 1
    return report


def go_profile(lines: int, seed: int = 1) -> tuple[bytes, int]:
    """A coverprofile whose blocks span 1-6 lines, as ``go test`` writes them."""
    rnd = random.Random(seed)
    out, made, blocks, n = ["mode: count"], 0, 0, 0
    while made < lines:
        name = f"github.com/org/repo/pkg{n // 20}/file{n}.go"
        ln, end = 1, min(rnd.randint(50, 800), lines - made)
        while ln < end:
            span = rnd.randint(1, 6)
            last = min(ln + span - 1, end)
            out.append(f"{name}:{ln}.2,{last}.{rnd.randint(2, 40)} {span} {rnd.choice((0, 1, 3))}")
            blocks += 1
            ln = last + 1
        made += end
        n += 1
    return ("\n".join(out) + "\n").encode(), blocks


def best_of(repeat: int, fn: Callable[[], object]) -> float:
    """Best CPU time of ``repeat`` runs: this process's own core time, so other
    tenants of a shared machine slow the wall clock but not the figure."""
    times = []
    for _ in range(repeat):
        gc.collect()
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return min(times)


def count_lines(report: Report) -> int:
    return sum(len(fc.lines) for fc in report.files.values())


def pycobertura_parse(raw_path: str) -> int:
    from pycobertura import Cobertura

    cov = Cobertura(raw_path)
    return sum(len(cov.line_statuses(f)) for f in cov.files())


def child(kind: str, path: str) -> None:
    """Runs in a fresh process: parse ``path`` once, print seconds, records and peak RSS."""
    if kind != "covworker":
        import pycobertura  # noqa: F401 - imported before the clock starts
    start = time.process_time()
    if kind == "covworker":
        records = count_lines(parse_report(Path(path).read_bytes(), limits=UNLIMITED))
    else:
        records = pycobertura_parse(path)
    took = time.process_time() - start
    print(f"{took} {records} {peak_rss_kib()}")


def peak_rss_kib() -> int:
    """This process's peak RSS. Linux keeps ru_maxrss across exec, so a child
    forked from a big parent would report the parent's size; VmHWM is per image."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def run_child(kind: str, path: str) -> tuple[float, int, float]:
    out = subprocess.run(
        [sys.executable, __file__, "--child", kind, path],
        check=True, capture_output=True, text=True,
    ).stdout.split()  # fmt: skip
    return float(out[0]), int(out[1]), int(out[2]) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=400_000, help="line records per format")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--big-mb", type=int, default=100, help="size of the memory test report")
    parser.add_argument("--write", type=Path, help="also write the markdown results here")
    parser.add_argument(
        "--only", help="these formats (comma-separated) beside Cobertura, and nothing else"
    )
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return

    rows: list[tuple[str, int, float, str]] = []
    reports = {
        "cobertura": to_cobertura(synthetic(args.lines)),
        "jacoco": to_jacoco(synthetic(args.lines)),
        "lcov": to_lcov(synthetic(args.lines, scheme="lcov")),
        "coverage.py-json": to_coverage_json(synthetic(args.lines, scheme="arc")),
    }
    go_raw, go_blocks = go_profile(args.lines)
    reports["go"] = go_raw
    plain = as_run(synthetic(args.lines))
    for fmt, write in ((f, WRITERS[f]) for f in RUN_FORMATS):
        reports[fmt] = write(plain)
    if args.only:
        keep = {"cobertura", *args.only.split(",")}
        reports = {fmt: raw for fmt, raw in reports.items() if fmt in keep}
    for fmt, raw in reports.items():
        records = count_lines(parse_report(raw, limits=UNLIMITED))
        took = best_of(args.repeat, lambda raw=raw: parse_report(raw, limits=UNLIMITED))
        note = f"{len(raw) / 1e6:.1f} MB"
        if fmt == "go":
            note += f", {go_blocks:,} blocks ({go_blocks / took:,.0f} blocks/s)"
        rows.append((fmt, records, records / took, note))
    if args.only:
        text = render(rows, [], [], args)
        print(text)
        if args.write:
            args.write.write_text(text)
        return

    with tempfile.NamedTemporaryFile(suffix=".xml", delete=False) as tmp:
        tmp.write(reports["cobertura"])
    try:
        took, records, _ = run_child("pycobertura", tmp.name)
        rows.append(("pycobertura (same Cobertura file)", records, records / took, "lxml tree"))
    finally:
        os.unlink(tmp.name)

    shards = [synthetic(args.lines // 10, seed=s, scheme="lcov") for s in range(10)]
    incoming = sum(count_lines(s) for s in shards)

    def merge_all() -> None:
        target = Report()
        for shard in shards:
            target.merge(shard)

    took = best_of(args.repeat, merge_all)
    rows.append(("merge", incoming, incoming / took, "10 overlapping shards, same files"))
    disjoint = [synthetic(args.lines // 10, seed=s) for s in range(10)]
    for i, shard in enumerate(disjoint):
        shard.files = {f"job{i}/{p}": fc for p, fc in shard.files.items()}
    took = best_of(args.repeat, lambda: [Report().merge(s) for s in disjoint])
    rows.append(("merge (disjoint files)", incoming, incoming / took, "copy path"))

    sample = shards[0].copy()
    for shard in shards[1:]:
        sample.merge(shard)
    blob = codec.dump(sample)
    n = count_lines(sample)
    took = best_of(args.repeat, lambda: codec.dump(sample))
    rows.append(("codec.dump", n, n / took, f"{len(blob) / 1e6:.1f} MB, the processor's write"))
    took = best_of(args.repeat, lambda: codec.load(blob))
    rows.append(("codec.load", n, n / took, "the finisher's read path"))

    memory = big_memory(args.big_mb)
    real = real_memory()
    text = render(rows, memory, real, args)
    print(text)
    if args.write:
        args.write.write_text(text)


MemoryRow = tuple[str, float, int, float, float]  # parser, MB, records, peak RSS MB, seconds


def big_memory(size_mb: int) -> list[MemoryRow]:
    """Peak RSS of each parser on one Cobertura report of ``size_mb`` MB."""
    line_bytes = len(to_cobertura(synthetic(10_000))) / 10_000
    big = to_cobertura(synthetic(int(size_mb * 1e6 / line_bytes), seed=7))
    results: list[MemoryRow] = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "big.xml")
        Path(path).write_bytes(big)
        del big
        size = os.path.getsize(path) / 1e6
        for kind in ("covworker", "pycobertura"):
            took, records, peak_mb = run_child(kind, path)
            results.append((kind, size, records, peak_mb, took))
        # the newer formats, each as one report of about the same size
        sample = as_run(synthetic(10_000))
        for fmt, write in ((f, WRITERS[f]) for f in RUN_FORMATS):
            lines = int(size_mb * 1e6 / (len(write(sample)) / 10_000))
            Path(path).write_bytes(write(as_run(synthetic(lines, seed=7))))
            size = os.path.getsize(path) / 1e6
            took, records, peak_mb = run_child("covworker", path)
            results.append((f"covworker, {fmt}", size, records, peak_mb, took))
    return results


def largest_real_reports() -> dict[str, Path]:
    """The largest real report of each format under REAL_REPORTS, by content."""
    best: dict[str, Path] = {}
    for root in REAL_REPORTS:
        for path in sorted(root.rglob("*")) if root.is_dir() else ():
            if (
                not path.is_file()
                or path.suffix in (".md", ".py", ".txt")
                or path.stat().st_size < 64
            ):
                continue
            try:
                fmt = detect_format(path.read_bytes()[: 1 << 16])
            except Exception:  # manifests, oracles, sources: not reports
                continue
            if path.name.endswith((".summary.json", ".oracle.json", "manifest.json")):
                continue
            if fmt not in best or path.stat().st_size > best[fmt].stat().st_size:
                best[fmt] = path
    return best


RealRow = tuple[str, str, float, int, float, float]  # format, file, MB, records, RSS MB, s


def real_memory() -> list[RealRow]:
    rows = []
    for fmt, path in sorted(largest_real_reports().items()):
        took, records, peak_mb = run_child("covworker", str(path))
        shown = path.relative_to(path.parents[2]) if len(path.parents) > 2 else path
        rows.append((fmt, str(shown), path.stat().st_size / 1e6, records, peak_mb, took))
    return rows


def render(
    rows: list[tuple[str, int, float, str]],
    memory: list[MemoryRow],
    real: list[RealRow],
    args: argparse.Namespace,
) -> str:
    out = [
        "# app.coverage: parse and merge throughput",
        "",
        f"Command: `python benchmarks/parse_throughput.py --lines {args.lines} "
        f"--repeat {args.repeat} --big-mb {args.big_mb}"
        + (f" --only {args.only}`" if args.only else "`"),
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores (shared), "
        f"Python {platform.python_version()}, lxml {etree.__version__}. Single-threaded;"
        " rates are line records per second of CPU time on one core (best of the repeats).",
        "",
        "| what | line records | records/s | target | meets | notes |",
        "|---|---:|---:|---:|:---:|---|",
    ]
    for name, records, rate, note in rows:
        target = TARGETS.get(name)
        verdict = "" if target is None else ("yes" if rate >= target else "**no**")
        shown = f"{target:,}" if target else ""
        out.append(f"| {name} | {records:,} | {rate:,.0f} | {shown} | {verdict} | {note} |")
    if args.only:  # the rates only
        return "\n".join(out) + "\n"
    out += [
        "",
        "Peak memory parsing one Cobertura report, and one synthetic report of each newer",
        "format of about the same size (fresh process each, peak RSS incl. the interpreter",
        "and the raw bytes; target for covworker: at most 1.5 GB):",
        "",
        "| parser | report MB | line records | peak RSS MB | CPU seconds |",
        "|---|---:|---:|---:|---:|",
    ]
    for kind, size, records, peak, took in memory:
        out.append(f"| {kind} | {size:,.0f} | {records:,} | {peak:,.0f} | {took:.1f} |")
    out += [
        "",
        "Peak memory parsing the largest real report of each format at hand (fresh process",
        "each; the newer formats' real reports are the small committed fixtures):",
        "",
        "| format | report | MB | line records | peak RSS MB | CPU seconds |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for fmt, name, size, records, peak, took in real:
        out.append(f"| {fmt} | {name} | {size:,.2f} | {records:,} | {peak:,.0f} | {took:.2f} |")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    main()
