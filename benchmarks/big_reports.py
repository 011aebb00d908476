"""The worker's parse of the load mix's biggest reports: 10 MB of each format.

Not a test: it measures. Each format's 10 MB report of the sustained-load mix
(``benchmarks/load/mix.py``, the same writers and seeds), sent as codecov-cli
sends it, parsed into its intermediate report as the upload processor parses
it (``app.ingest.parse.payload_intermediate``), best CPU time of ``--repeat``
on one core; and beside it, in the same run, the same parse with the cyclic
collector left running (what a parse cost before it paused the collector).

    python benchmarks/big_reports.py --repeat 3 [--payloads /tmp/big] [--markdown]
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.coverage.limits import ParseLimits
from app.ingest import parse as parse_module
from benchmarks.load.mix import Mix, make_mix

SIZE = 10_000_000


def best_cpu_s(repeat: int, fn: Callable[[], object]) -> float:
    """Best CPU time of ``repeat`` runs of ``fn`` in this process, each after a
    full collection (so one run's garbage is not the next one's cost)."""
    times = []
    for _ in range(repeat):
        gc.collect()
        start = time.process_time()
        with contextlib.suppress(Exception):  # over a limit (the mix's covr): refused, timed
            fn()
        times.append(time.process_time() - start)
    return min(times)


def measure(mix: Mix, repeat: int) -> list[dict[str, object]]:
    limits = ParseLimits()
    rows = []
    for payload in mix.payloads:
        if payload.kind != "coverage" or not payload.path.endswith(f"-{SIZE}-0.json"):
            continue
        body = Path(payload.path).read_bytes()
        own = limits.for_input(len(body))

        def parse(body: bytes = body, own: ParseLimits = own) -> object:
            return parse_module.payload_intermediate(body, own)

        paused = best_cpu_s(repeat, parse)
        with mock.patch.object(parse_module, "gc_paused", contextlib.nullcontext):
            running = best_cpu_s(repeat, parse)
        rows.append(
            {
                "format": payload.report_format,
                "raw_mb": round(payload.raw_bytes / 1e6, 2),
                "lines": payload.lines,
                "collector_running_s": round(running, 3),
                "paused_s": round(paused, 3),
            }
        )
    return sorted(rows, key=lambda r: -float(r["collector_running_s"]))  # type: ignore[arg-type]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--payloads", type=Path, help="keep the generated payloads here")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        where = args.payloads or Path(tmp)
        mix = make_mix(where / "big", sizes=((SIZE, 1.0),), variants=1)
        rows = measure(mix, args.repeat)
    if args.markdown:
        print("| format | raw MB | lines | collector running (s) | paused (s) | ratio |")
        print("|---|---:|---:|---:|---:|---:|")
        for r in rows:
            ratio = float(r["collector_running_s"]) / max(float(r["paused_s"]), 1e-9)  # type: ignore[arg-type]
            print(
                f"| {r['format']} | {r['raw_mb']} | {r['lines']:,} | {r['collector_running_s']} "
                f"| {r['paused_s']} | {ratio:.2f}x |"
            )
        total_on = sum(float(r["collector_running_s"]) for r in rows)  # type: ignore[arg-type]
        total_off = sum(float(r["paused_s"]) for r in rows)  # type: ignore[arg-type]
        ratio = total_on / total_off
        print(f"| all {len(rows)} | | | {total_on:.2f} | {total_off:.2f} | {ratio:.2f}x |")
    else:
        for r in rows:
            print(r)


if __name__ == "__main__":
    main()
