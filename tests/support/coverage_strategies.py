"""Hypothesis strategies for coverage models, and the suite's example budget.

``COVWORKER_HYPOTHESIS_EXAMPLES`` sets the examples per property. By
default CI (``CI`` set, as ``.ci/run`` does) tries 60 and a developer's run
20, which keeps the unit tier's loop short: the properties are a fifth of
its time at 60.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from app.coverage import Branches, FileCoverage, Report


def _examples_per_property() -> int:
    default = "60" if os.environ.get("CI", "").lower() in {"1", "true", "yes"} else "20"
    return int(os.environ.get("COVWORKER_HYPOTHESIS_EXAMPLES", default))


PROPERTY_SETTINGS = settings(
    max_examples=_examples_per_property(),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

segments = st.text(alphabet="abcdefgh_", min_size=1, max_size=5)
paths = st.builds(
    lambda dirs, name: "/".join([*dirs, name + ".py"]),
    st.lists(segments, max_size=3),
    segments,
)
line_numbers = st.integers(min_value=1, max_value=400)
BRANCH_IDS = ["lcov:0,0", "lcov:0,1", "lcov:1,0", "arc:3", "arc:-1", "arc:7", "go:1.2,1.9"]


@st.composite
def branches(
    draw: st.DrawFn, *, id_schemes: tuple[str, ...] | None = None, count_only: bool = False
) -> Branches:
    """Count-only, identity-known or missed-identity branches (any scheme, or
    only ``id_schemes``)."""
    universe = [i for i in BRANCH_IDS if id_schemes is None or i.split(":")[0] in id_schemes]
    if count_only or (id_schemes is None and draw(st.booleans())):
        total = draw(st.integers(1, 6))
        return Branches(draw(st.integers(0, total)), total)
    if id_schemes is None and draw(st.booleans()):  # coverage.py Cobertura's missing-branches
        missed = draw(st.sets(st.sampled_from(["arc:3", "arc:-1", "arc:7", "arc:exit"])))
        return Branches.from_missed(len(missed) + draw(st.integers(0, 3)), frozenset(missed))
    all_ids = draw(st.sets(st.sampled_from(universe), min_size=1))
    covered = draw(st.sets(st.sampled_from(sorted(all_ids))))
    return Branches.from_ids(frozenset(covered), frozenset(all_ids))


@st.composite
def file_coverages(
    draw: st.DrawFn,
    *,
    max_hits: int = 20,
    branch_strategy: st.SearchStrategy[Branches] | None = None,
    min_lines: int = 0,
) -> FileCoverage:
    lines = draw(
        st.dictionaries(line_numbers, st.integers(0, max_hits), min_size=min_lines, max_size=25)
    )
    fc = FileCoverage(lines=lines)
    strategy = branch_strategy if branch_strategy is not None else branches()
    if lines and draw(st.booleans()):
        for ln in draw(st.sets(st.sampled_from(sorted(lines)), max_size=6)):
            fc.branches[ln] = draw(strategy)
    return fc


def reports(
    *,
    max_hits: int = 20,
    branch_strategy: st.SearchStrategy[Branches] | None = None,
    min_files: int = 0,
    min_lines: int = 0,
) -> st.SearchStrategy[Report]:
    """Reports; a writer round trip needs ``min_files=1`` (and Go ``min_lines=1``:
    a coverprofile cannot name a file without blocks)."""
    files = file_coverages(max_hits=max_hits, branch_strategy=branch_strategy, min_lines=min_lines)
    return st.builds(Report, st.dictionaries(paths, files, min_size=min_files, max_size=4))
