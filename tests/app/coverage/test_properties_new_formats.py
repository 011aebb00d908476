"""The six newer parsers, checked by hypothesis through writers of their formats.

For any run written in a format, the parsed totals equal a per-line
reference count of the run; and reports parsed from any runs merge
associatively and commutatively.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.coverage import Report, Totals, parse_report
from tests.support.coverage_strategies import PROPERTY_SETTINGS
from tests.support.writers import WRITERS, Run

pytestmark = pytest.mark.timeout(300)

FORMATS = sorted(WRITERS)

taken = st.lists(st.integers(0, 3), min_size=2, max_size=4).filter(lambda t: len(t) % 2 == 0)
line = st.tuples(st.integers(0, 5), st.none() | taken.map(tuple))
runs: st.SearchStrategy[Run] = st.dictionaries(
    st.sampled_from(["src/a.x", "src/b.x", "lib/c.x"]),
    st.dictionaries(st.integers(1, 60), line, min_size=1, max_size=20),
    min_size=1,
    max_size=3,
)


def reference(run: Run) -> tuple[Totals, int, int]:
    """Totals counted line by line from the run itself, and branches total/covered."""
    lines = hits = misses = partials = branches = covered = 0
    for file_lines in run.values():
        for count, took in file_lines.values():
            lines += 1
            missed = bool(took) and any(t == 0 for t in took)
            if count == 0:
                misses += 1
            elif missed:
                partials += 1
            else:
                hits += 1
            branches += len(took or ())
            covered += sum(1 for t in took or () if t)
    return Totals(len(run), lines, hits, misses, partials), branches, covered


def parsed(fmt: str, run: Run) -> Report:
    return parse_report(WRITERS[fmt](run))


@pytest.mark.parametrize("fmt", FORMATS)
def test_parsed_totals_equal_a_per_line_count_of_what_was_written(fmt: str) -> None:
    @PROPERTY_SETTINGS
    @given(runs)
    def check(run: Run) -> None:
        report = parsed(fmt, run)
        totals, branches, covered = reference(run)
        assert report.totals() == totals
        found = [b for fc in report.files.values() for b in fc.branches.values()]
        assert (sum(b.total for b in found), sum(b.covered for b in found)) == (branches, covered)

    check()


@pytest.mark.parametrize("fmt", FORMATS)
def test_reports_of_each_new_format_merge_associatively_and_commutatively(fmt: str) -> None:
    @PROPERTY_SETTINGS
    @given(runs, runs, runs)
    def check(a: Run, b: Run, c: Run) -> None:
        ra, rb, rc = parsed(fmt, a), parsed(fmt, b), parsed(fmt, c)
        left = ra.copy()
        left.merge(rb)
        left.merge(rc)
        tail = rb.copy()
        tail.merge(rc)
        right = ra.copy()
        right.merge(tail)
        assert left == right and left.totals() == right.totals()
        ab, ba = ra.copy(), rb.copy()
        ab.merge(rb)
        ba.merge(ra)
        assert ab == ba

    check()


@pytest.mark.parametrize("fmt", ["istanbul", "simplecov", "llvm", "gcov", "opencover"])
def test_a_branch_taken_in_one_run_and_its_sibling_in_another_merge_to_covered(fmt: str) -> None:
    first = parsed(fmt, {"a.x": {3: (1, (1, 0))}})
    first.merge(parsed(fmt, {"a.x": {3: (1, (0, 2))}}))
    br = first.files["a.x"].branches[3]
    assert (br.covered, br.total) == (2, 2)
    assert first.totals().partials == 0
