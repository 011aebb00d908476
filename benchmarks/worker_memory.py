"""A worker process's memory at the monorepo's full size, without the servers.

    python benchmarks/worker_memory.py [UPLOADS [FILES]]        # default 24, 20000
    MALLOC_ARENA_MAX=2 python benchmarks/worker_memory.py
    python benchmarks/worker_memory.py phases [FILES]          # traced, one upload
    COVWORKER_PARSE_VIA=report python benchmarks/worker_memory.py   # the Report, then its dump

Eight threads take turns parsing 1,000,000-line LCOV uploads (FILES x 50
lines, branches on every tenth) one at a time, as the parse budget's default
makes a worker do at this size, and write each one's intermediate; every
third upload a finisher thread merges what was parsed (decode the merged
report and the new intermediates, merge, encode) beside the next parses.
``phases``: one upload's parse, the write of its intermediate and a
decode of it, each one's peak traced by ``tracemalloc`` (Python's own
allocations; slow while tracing, so no CPU figures).

Each upload is parsed as the processor does (``report_intermediate``: the
parser hands each file to the intermediate's writer); with
``COVWORKER_PARSE_VIA=report``, into a whole :class:`Report` first and then
``codec.dump``, the way it was done before, for a side-by-side run.

Prints the process's peak RSS (``ru_maxrss``): glibc's arenas per thread and
what the parse and the pass hold at once. Four distinct reports are
generated and reused (they stay in memory: ``base``).
"""

import os
import queue
import resource
import sys
import threading
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.coverage import codec, detect_format, parse_report
from app.coverage.columnar import Accumulator
from app.coverage.limits import ParseLimits
from app.ingest.parse import report_intermediate
from tests.support.synthetic import monorepo_lcov


def rss_now_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def intermediate(raw: bytes, limits: ParseLimits) -> bytes:
    fmt = detect_format(raw)
    if os.environ.get("COVWORKER_PARSE_VIA") == "report":
        return codec.dump(parse_report(raw, limits=limits, fmt=fmt))
    return report_intermediate(raw, limits, fmt).data


def main(uploads: int, files: int) -> str:
    raws = [monorepo_lcov(job, files, 50) for job in range(4)]
    base = rss_now_mib()
    limits = ParseLimits().for_input(len(raws[0]))
    blobs: list[bytes] = []
    merged: list[bytes] = []
    lock = threading.Lock()

    def parse_one(i: int) -> None:
        raw = raws[i % 4]
        blob = intermediate(raw, limits)
        with lock:
            blobs.append(blob)

    def merge_pass() -> None:
        with lock:
            todo, blobs[:] = list(blobs), []
        if not todo:
            return
        acc = Accumulator()
        if merged:
            acc.add(codec.load_part(merged[-1]))
        for blob in todo:
            acc.add(codec.load_part(blob))
        merged[:] = [codec.dump_columns(acc.files)]
        acc.totals()

    inboxes: list[queue.Queue[int | None]] = [queue.Queue() for _ in range(8)]
    parsed = threading.Semaphore(0)

    def parser(inbox: queue.Queue[int | None]) -> None:
        while (i := inbox.get()) is not None:
            parse_one(i)
            parsed.release()

    threads = [threading.Thread(target=parser, args=(inbox,)) for inbox in inboxes]
    for thread in threads:
        thread.start()
    finisher = threading.Thread(target=merge_pass)
    cpu = time.process_time()
    for i in range(uploads):  # one parse at a time (the budget), on the threads in turn
        inboxes[i % 8].put(i)
        parsed.acquire()
        if i % 3 == 2 and not finisher.is_alive():  # a pass beside the next parses
            finisher = threading.Thread(target=merge_pass)
            finisher.start()
    for inbox in inboxes:
        inbox.put(None)
    for thread in threads:
        thread.join()
    if finisher.is_alive():
        finisher.join()
    merge_pass()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    arenas = os.environ.get("MALLOC_ARENA_MAX", "unset")
    via = os.environ.get("COVWORKER_PARSE_VIA", "writer")
    return (
        f"parse via {via}, MALLOC_ARENA_MAX={arenas}: base {base:.0f} MiB, "
        f"peak RSS {peak:.0f} MiB, "
        f"end RSS {rss_now_mib():.0f} MiB, merged report {len(merged[-1]) / 2**20:.1f} MiB "
        f"stored, CPU {time.process_time() - cpu:.1f} s"
    )


def phases(files: int) -> str:
    raw = monorepo_lcov(3, files, 50)
    limits = ParseLimits().for_input(len(raw))
    mib = 2**20
    tracemalloc.start()
    report = parse_report(raw, limits=limits, fmt=detect_format(raw))
    held, peak = tracemalloc.get_traced_memory()
    out = [f"{len(raw) / mib:.1f} MiB of LCOV; parse: holds {held / mib:.1f}"]
    out[0] += f", peak {peak / mib:.1f}"
    tracemalloc.reset_peak()
    blob = codec.dump(report)
    out.append(f"writing the intermediate: peak {tracemalloc.get_traced_memory()[1] / mib:.1f}")
    del report
    held = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    part = codec.load_part(blob)
    now, peak = tracemalloc.get_traced_memory()
    out.append(f"decoding it: holds {(now - held) / mib:.1f}, peak {(peak - held) / mib:.1f} MiB")
    del part
    tracemalloc.reset_peak()
    held = tracemalloc.get_traced_memory()[0]
    blob = report_intermediate(raw, limits, detect_format(raw)).data
    peak = tracemalloc.get_traced_memory()[1] - held
    out.append(f"parsed straight into the intermediate: peak {peak / mib:.1f} MiB")
    tracemalloc.stop()
    return "; ".join(out)


if __name__ == "__main__":
    if sys.argv[1:2] == ["phases"]:
        print(phases(int(sys.argv[2]) if len(sys.argv) > 2 else 20000))
        sys.exit()
    args = [int(a) for a in sys.argv[1:3]]
    print(main(*(args + [24, 20000][len(args) :])))
