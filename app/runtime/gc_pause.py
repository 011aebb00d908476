"""The cyclic garbage collector held off while a merge pass or a parse builds its report.

A merge pass decodes each upload into a few hundred thousand containers (a
tuple per branch record, two lists and a dict per file) and keeps a report of
as many alive. Each 700 allocations start a collection, and every tenth of
those walks the pass's live report again: a third of a pass's CPU at
1,000,000 lines (``BENCHMARKS.md``, "The merge pass"), to find cycles that
the pass never makes (its numbers, lists and tuples are freed by reference
counting the moment they are dropped). A parse is the same: a 10 MB
Coveralls report's sets and branches cost as much collecting as parsing
(``BENCHMARKS.md``, "Big reports parsed faster").

The collector is one per process, so pausing it is counted: it is turned
off when the first pauser enters and back on when the last one leaves (other
threads' passes, parses and messages run meanwhile, their acyclic garbage
freed as always; cycles they make wait for the pass to end). A process whose
threads keep it paused for longer than ``COLLECT_EVERY_S`` (a backlog parsed
without a break) collects once then, in the thread that enters next, so
those cycles do not pile up for as long as the backlog lasts. A process that
had it off keeps it off.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

#: Longest the collector stays paused without one collection (seconds).
COLLECT_EVERY_S = 30.0

_lock = threading.Lock()
_pausers = 0
_was_enabled = False
_collected_at = 0.0  # when the collector was paused or last collected while paused


@contextmanager
def gc_paused() -> Iterator[None]:
    """No automatic cyclic collection inside (see the module docstring)."""
    global _pausers, _was_enabled, _collected_at
    collect = False
    with _lock:
        now = time.monotonic()
        if _pausers == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
            _collected_at = now
        elif _was_enabled and now - _collected_at > COLLECT_EVERY_S:
            collect, _collected_at = True, now
        _pausers += 1
    if collect:  # paused too long by overlapping holders: what they left behind
        gc.collect()
    try:
        yield
    finally:
        with _lock:
            _pausers -= 1
            if _pausers == 0 and _was_enabled:
                gc.enable()
