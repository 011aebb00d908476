"""The cyclic garbage collector held off while a merge pass builds its report.

A merge pass decodes each upload into a few hundred thousand containers (a
tuple per branch record, two lists and a dict per file) and keeps a report of
as many alive. Each 700 allocations start a collection, and every tenth of
those walks the pass's live report again: a third of a pass's CPU at
1,000,000 lines (``BENCHMARKS.md``, "The merge pass"), to find cycles that
the pass never makes (its numbers, lists and tuples are freed by reference
counting the moment they are dropped).

The collector is one per process, so pausing it is counted: it is turned
off when the first pauser enters and back on when the last one leaves (other
threads' passes, parses and messages run meanwhile, their acyclic garbage
freed as always; cycles they make wait for the pass to end). A process that
had it off keeps it off.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_pausers = 0
_was_enabled = False


@contextmanager
def gc_paused() -> Iterator[None]:
    """No automatic cyclic collection inside (see the module docstring)."""
    global _pausers, _was_enabled
    with _lock:
        if _pausers == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _pausers += 1
    try:
        yield
    finally:
        with _lock:
            _pausers -= 1
            if _pausers == 0 and _was_enabled:
                gc.enable()
