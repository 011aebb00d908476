"""Turn start/end records of actor runs into the claims the gate tests check."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable


def max_running_per_key(runs: Iterable[tuple[str, float, float]]) -> dict[str, int]:
    """The most runs of each key that overlapped in time, from ``(key, start, end)``.

    At equal times an end counts before a start: a slot handed over at the
    same instant is not an overlap.
    """
    events: dict[str, list[tuple[float, int]]] = defaultdict(list)
    for key, start, end in runs:
        events[key] += [(start, 1), (end, -1)]
    most: dict[str, int] = {}
    for key, points in events.items():
        running = peak = 0
        for _, step in sorted(points):
            running += step
            peak = max(peak, running)
        most[key] = peak
    return most


def run_counts(ids: Iterable[object]) -> Counter[object]:
    return Counter(ids)
