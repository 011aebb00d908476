"""Micro-benchmark: the CPU of one finisher merge pass over a big report.

Not a test: it measures, it does not assert. It answers "what does one
merge pass of ``--uploads`` uploads of a ``--files`` x ``--lines`` report
cost, and where does it go", without PostgreSQL or Redis: the pass does
what :func:`app.pipeline.finisher.merge_pass` does to the data, in one
process, on one core:

1. decode the commit's merged report (``codec.load``; empty at first),
2. per upload: decode its intermediate (as fetched from Redis) and merge it,
3. encode the merged report (``to_bytes``) and total it (``totals()``).

The intermediates are the real processor's output (each synthetic LCOV
upload parsed once, then ``to_bytes``), made before the clock starts. The
figure is line records merged per CPU second (``uploads x lines`` over the
pass's ``time.process_time``), and each step's share. ``--passes K`` splits
the uploads into K consecutive passes (as a trickle does without a
debounce) and reports their total against the single pass. ``--how``
runs the pass through the model (``Report``, as before) and through
:mod:`app.coverage.columnar` (what the finisher runs), side by side, and
checks they merge to the same report.

    python benchmarks/merge_pass.py --uploads 200 --files 20000 --lines 50
    python benchmarks/merge_pass.py --uploads 20 --files 2000 --lines 50 --passes 1 4 20
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.coverage import Report, codec, parse_report
from app.coverage.columnar import Accumulator
from app.coverage.serial import dump_v3
from app.runtime.gc_pause import gc_paused
from tests.support.synthetic import monorepo_lcov


def intermediates(uploads: int, files: int, lines: int, distinct: int) -> dict[str, list[bytes]]:
    """``uploads`` serialised reports, per way of merging: version 3 (JSON) for the
    model, as the processor wrote them before, version 4 (binary columns) for the
    columnar pass. Only ``distinct`` are generated and parsed (job patterns repeat
    after that), to keep the set-up short."""
    reports = [parse_report(monorepo_lcov(job, files, lines)) for job in range(distinct)]
    v3 = [dump_v3(r) for r in reports]
    v4 = [codec.dump(r) for r in reports]
    return {
        "model": [v3[i % len(v3)] for i in range(uploads)],
        "columnar": [v4[i % len(v4)] for i in range(uploads)],
    }


@dataclass(frozen=True)
class Way:
    """One way of merging, as the steps of a pass (each is timed on its own)."""

    start: Callable[[bytes | None], Any]  # the merged report decoded (empty at first)
    decode: Callable[[bytes], Any]  # an upload's intermediate decoded
    merge: Callable[[Any, Any], object]  # an upload merged into the merged report
    encode: Callable[[Any], bytes]
    totals: Callable[[Any], object]


def _accumulator(merged_blob: bytes | None) -> Accumulator:
    merged = Accumulator()
    if merged_blob:
        merged.add(codec.load_part(merged_blob))
    return merged


#: The model (``Report``, version 3 JSON), as before, and :mod:`app.coverage.columnar`
#: (what the finisher runs, with the cyclic collector paused: ``app.runtime.gc_pause``),
#: and the same with the collector running, as passes ran before it was paused.
WAYS = {
    "model": Way(
        start=lambda blob: codec.load(blob) if blob else Report(),
        decode=codec.load,
        merge=Report.merge,
        encode=dump_v3,
        totals=Report.totals,
    ),
    "columnar": Way(
        start=_accumulator,
        decode=codec.load_part,
        merge=Accumulator.add,
        encode=lambda merged: codec.dump_columns(merged.files),
        totals=Accumulator.totals,
    ),
}
WAYS["columnar-collecting"] = WAYS["columnar"]
#: The ways that run as the finisher does, inside ``gc_paused``.
GC_PAUSED = {"columnar"}


def one_pass(
    way: Way, merged_blob: bytes | None, blobs: list[bytes]
) -> tuple[bytes, dict[str, float]]:
    """One pass: decode the merged report, decode and merge each upload, encode, total."""
    steps = dict.fromkeys(("decode merged", "decode uploads", "merge", "encode", "totals"), 0.0)
    clock = time.process_time
    t = clock()
    merged = way.start(merged_blob)
    steps["decode merged"] += clock() - t
    for blob in blobs:
        t = clock()
        part = way.decode(blob)
        t2 = clock()
        way.merge(merged, part)
        steps["decode uploads"] += t2 - t
        steps["merge"] += clock() - t2
    t = clock()
    out = way.encode(merged)
    steps["encode"] += clock() - t
    t = clock()
    way.totals(merged)
    steps["totals"] += clock() - t
    return out, steps


def run(blobs: dict[str, list[bytes]], passes: int, how: str = "columnar") -> dict[str, Any]:
    """``passes`` consecutive passes over ``blobs[how]`` (the model reads version 3)."""
    return _run(blobs["model" if how == "model" else "columnar"], passes, how)


def _run(blobs: list[bytes], passes: int, how: str) -> dict[str, Any]:
    per = -(-len(blobs) // passes)
    merged: bytes | None = None
    total = dict.fromkeys(("decode merged", "decode uploads", "merge", "encode", "totals"), 0.0)
    gc.collect()
    started = time.process_time()
    for start in range(0, len(blobs), per):
        with gc_paused() if how in GC_PAUSED else contextlib.nullcontext():
            merged, steps = one_pass(WAYS[how], merged, blobs[start : start + per])
        for name, seconds in steps.items():
            total[name] += seconds
    cpu = time.process_time() - started
    assert merged is not None
    return {"how": how, "passes": passes, "cpu_s": cpu, "steps": total, "merged": merged}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--uploads", type=int, default=200)
    parser.add_argument("--files", type=int, default=20000)
    parser.add_argument("--lines", type=int, default=50, help="lines per file")
    parser.add_argument(
        "--distinct", type=int, default=8, help="distinct upload reports (they repeat)"
    )
    parser.add_argument("--passes", type=int, nargs="+", default=[1])
    parser.add_argument(
        "--how",
        nargs="+",
        choices=sorted(WAYS),
        default=["model", "columnar"],
        help="model: through Report (the old pass); columnar: app.coverage.columnar "
        "(collector paused, as the finisher runs it); columnar-collecting: the same, "
        "collector running",
    )
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    line_records = args.uploads * args.files * args.lines
    print(
        f"{args.uploads} uploads x {args.files} files x {args.lines} lines "
        f"= {line_records:,} line records (branches on every 10th line)"
    )
    blobs = intermediates(args.uploads, args.files, args.lines, args.distinct)
    sizes = {how: f"{len(b[0]):,}" for how, b in blobs.items()}
    print(f"intermediate bytes per upload: {sizes}")
    results = []
    for passes in args.passes:
        outputs = []
        for how in args.how:
            result = run(blobs, passes, how)
            outputs.append(codec.load(result.pop("merged")))
            result["line_records_per_cpu_s"] = line_records / result["cpu_s"]
            results.append(result)
            steps = ", ".join(f"{k} {v:.2f} s" for k, v in result["steps"].items())
            print(
                f"{how:>8}, {passes} pass(es): {result['cpu_s']:.2f} s CPU, "
                f"{result['line_records_per_cpu_s']:,.0f} line records/s per core ({steps})"
            )
        # Both ways must give the same report, or the figures mean nothing.
        assert all(o == outputs[0] for o in outputs), "the merged reports differ"
    if args.json:
        document = {"uploads": args.uploads, "files": args.files, "lines": args.lines}
        args.json.write_text(json.dumps({**document, "runs": results}, indent=2) + "\n")


if __name__ == "__main__":
    main()
