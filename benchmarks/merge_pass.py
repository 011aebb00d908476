"""Micro-benchmark: the CPU of one finisher merge pass over a big report.

Not a test: it measures, it does not assert. It answers "what does one
merge pass of ``--uploads`` uploads of a ``--files`` x ``--lines`` report
cost, and where does it go", without PostgreSQL or Redis: the pass does
what :func:`app.pipeline.finisher.merge_pass` does to the data, in one
process, on one core:

1. decode the commit's merged report (``Report.from_bytes``; empty at first),
2. per upload: decode its intermediate (as fetched from Redis) and merge it,
3. encode the merged report (``to_bytes``) and total it (``totals()``).

The intermediates are the real processor's output (each synthetic LCOV
upload parsed once, then ``to_bytes``), made before the clock starts. The
figure is line records merged per CPU second (``uploads x lines`` over the
pass's ``time.process_time``), and each step's share. ``--passes K`` splits
the uploads into K consecutive passes (as a trickle does without a
debounce) and reports their total against the single pass.

    python benchmarks/merge_pass.py --uploads 200 --files 20000 --lines 50
    python benchmarks/merge_pass.py --uploads 20 --files 2000 --lines 50 --passes 1 4 20
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.coverage import Report, parse_report
from benchmarks.synthetic import monorepo_lcov


def intermediates(uploads: int, files: int, lines: int, distinct: int) -> list[bytes]:
    """``uploads`` serialised reports; only ``distinct`` are generated and parsed
    (job patterns repeat after that), to keep the set-up short."""
    made = [
        parse_report(monorepo_lcov(job, files, lines)).to_bytes()
        for job in range(min(distinct, uploads))
    ]
    return [made[i % len(made)] for i in range(uploads)]


def one_pass(merged_blob: bytes | None, blobs: list[bytes]) -> tuple[bytes, dict[str, float]]:
    """One pass: decode the merged report, decode and merge each upload, encode, total."""
    steps = dict.fromkeys(("decode merged", "decode uploads", "merge", "encode", "totals"), 0.0)
    clock = time.process_time
    t = clock()
    merged = Report.from_bytes(merged_blob) if merged_blob else Report()
    steps["decode merged"] += clock() - t
    for blob in blobs:
        t = clock()
        part = Report.from_bytes(blob)
        t2 = clock()
        merged.merge(part)
        steps["decode uploads"] += t2 - t
        steps["merge"] += clock() - t2
    t = clock()
    out = merged.to_bytes()
    steps["encode"] += clock() - t
    t = clock()
    merged.totals()
    steps["totals"] += clock() - t
    return out, steps


def run(blobs: list[bytes], passes: int) -> dict[str, Any]:
    per = -(-len(blobs) // passes)
    merged: bytes | None = None
    total = dict.fromkeys(("decode merged", "decode uploads", "merge", "encode", "totals"), 0.0)
    gc.collect()
    started = time.process_time()
    for start in range(0, len(blobs), per):
        merged, steps = one_pass(merged, blobs[start : start + per])
        for name, seconds in steps.items():
            total[name] += seconds
    cpu = time.process_time() - started
    return {"passes": passes, "cpu_s": cpu, "steps": total}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--uploads", type=int, default=200)
    parser.add_argument("--files", type=int, default=20000)
    parser.add_argument("--lines", type=int, default=50, help="lines per file")
    parser.add_argument(
        "--distinct", type=int, default=8, help="distinct upload reports (they repeat)"
    )
    parser.add_argument("--passes", type=int, nargs="+", default=[1])
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    line_records = args.uploads * args.files * args.lines
    print(
        f"{args.uploads} uploads x {args.files} files x {args.lines} lines "
        f"= {line_records:,} line records (branches on every 10th line)"
    )
    blobs = intermediates(args.uploads, args.files, args.lines, args.distinct)
    print(f"intermediate: {len(blobs[0]):,} bytes per upload")
    results = []
    for passes in args.passes:
        result = run(blobs, passes)
        result["line_records_per_cpu_s"] = line_records / result["cpu_s"]
        results.append(result)
        steps = ", ".join(f"{k} {v:.2f} s" for k, v in result["steps"].items())
        print(
            f"{passes} pass(es): {result['cpu_s']:.2f} s CPU, "
            f"{result['line_records_per_cpu_s']:,.0f} line records/s per core ({steps})"
        )
    if args.json:
        document = {"uploads": args.uploads, "files": args.files, "lines": args.lines}
        args.json.write_text(json.dumps({**document, "runs": results}, indent=2) + "\n")


if __name__ == "__main__":
    main()
