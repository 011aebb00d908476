"""Merge laws and writer/parser round trips, checked by hypothesis.

Every format of the writer registry (``tests.support.writers.WRITERS``) is
checked by the same round trip: a model the format can say exactly parses
back to itself; a plain run written in one of the newer formats parses to
the totals a per-line count of the run gives."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.coverage import Branches, FileCoverage, Report, Totals, codec, parse_report
from app.coverage.model import scheme_size
from tests.support.coverage_strategies import PROPERTY_SETTINGS, branches, reports
from tests.support.writers import RUN_FORMATS, WRITERS, Run, to_go
from tests.support.writers_a import CONSISTENT_FORMATS, LINE_FORMATS
from tests.support.writers_c import SAYS

pytestmark = pytest.mark.timeout(120)


def merged(*parts: Report) -> Report:
    out = Report()
    for part in parts:
        out.merge(part)
    return out


@PROPERTY_SETTINGS
@given(reports(), reports(), reports())
def test_merging_is_associative(a: Report, b: Report, c: Report) -> None:
    left = merged(a, b)
    left.merge(c)
    right_tail = merged(b, c)
    right = a.copy()
    right.merge(right_tail)
    assert left == right
    assert left.totals() == right.totals()


@PROPERTY_SETTINGS
@given(reports(), reports())
def test_merging_is_commutative(a: Report, b: Report) -> None:
    assert merged(a, b) == merged(b, a)


@PROPERTY_SETTINGS
@given(branches(), branches(), branches())
def test_branch_merging_is_associative_commutative_and_idempotent_for_mixed_kinds(
    x: Branches, y: Branches, z: Branches
) -> None:
    assert x.merged(y).merged(z) == x.merged(y.merged(z))
    assert x.merged(y) == y.merged(x)
    assert x.merged(x) == x
    joined = x.merged(y)
    assert joined.covered <= joined.total
    assert joined.covered >= max(x.covered, y.covered)
    assert joined.total >= max(x.total, y.total)


@PROPERTY_SETTINGS
@given(branches(), branches())
def test_branch_merging_matches_its_definition(x: Branches, y: Branches) -> None:
    """covered/total = max of each side's, of the per-scheme size of the unions
    and of the missed-identity contribution (missed ids intersected)."""
    covered_ids = (x.covered_ids or frozenset()) | (y.covered_ids or frozenset())
    all_ids = (x.all_ids or frozenset()) | (y.all_ids or frozenset())
    missed = [b.missed_ids for b in (x, y) if b.missed_ids is not None]
    from_missed = 0
    if missed:
        still_missed = frozenset.intersection(*missed) - covered_ids
        from_missed = max(x.miss_total, y.miss_total) - len(still_missed)
    joined = x.merged(y)
    assert joined.covered == max(x.covered, y.covered, scheme_size(covered_ids), from_missed)
    assert joined.total == max(x.total, y.total, scheme_size(all_ids))
    assert (joined.covered_ids or frozenset()) == covered_ids
    assert (joined.all_ids or frozenset()) == all_ids


@PROPERTY_SETTINGS
@given(reports(), reports())
def test_merging_does_not_change_the_report_merged_in(a: Report, b: Report) -> None:
    before = b.copy()
    target = a.copy()
    target.merge(b)
    target.merge(b)
    assert b == before


@st.composite
def report_and_shards(draw: st.DrawFn) -> tuple[Report, list[Report]]:
    """A report, and shards that each hold part of its hits and branches."""
    report = draw(reports())
    k = draw(st.integers(1, 4))
    shards = [Report() for _ in range(k)]
    for path, fc in report.files.items():
        owners = [draw(st.integers(0, k - 1)) for _ in range(2)]  # file present in 1-2 shards
        for i in set(owners):
            shards[i].files[path] = FileCoverage()
        present = sorted(set(owners))
        for ln, hits in fc.lines.items():
            cut = draw(st.integers(0, hits))  # hits split over two shards that hold the file
            shards[present[0]].files[path].lines[ln] = cut
            last = shards[present[-1]].files[path].lines
            last[ln] = last.get(ln, 0) + hits - cut
        for ln, br in fc.branches.items():
            if br.all_ids is None:  # count-only: one shard knows it all, the other knows less
                shards[present[0]].files[path].branches[ln] = br
                if len(present) > 1:
                    lower = draw(st.integers(0, br.covered))
                    shards[present[-1]].files[path].branches[ln] = Branches(lower, br.total)
                continue
            spread: dict[int, set[str]] = {i: set() for i in present}
            for ident in sorted(br.covered_ids or ()):  # each covered branch seen by one shard
                spread[draw(st.sampled_from(present))].add(ident)
            for i in present:  # every shard knows every branch
                shards[i].files[path].branches[ln] = Branches.from_ids(
                    frozenset(spread[i]), br.all_ids
                )
    return report, shards


@PROPERTY_SETTINGS
@given(report_and_shards())
def test_splitting_a_report_into_shards_and_merging_them_gives_the_report_back(
    case: tuple[Report, list[Report]],
) -> None:
    report, shards = case
    assert merged(*shards) == report
    assert merged(*reversed(shards)) == report


@PROPERTY_SETTINGS
@given(reports())
def test_a_report_survives_its_serialised_form(report: Report) -> None:
    assert codec.load(codec.dump(report)) == report


@st.composite
def go_reports(draw: st.DrawFn, max_hits: int) -> Report:
    """Go-shaped models: a line with branches is the blocks on it; hit iff one ran."""
    report = draw(
        reports(max_hits=max_hits, branch_strategy=st.nothing(), min_files=1, min_lines=1)
    )
    for fc in report.files.values():
        for ln in draw(st.sets(st.sampled_from(sorted(fc.lines) or [0]), max_size=3)):
            if ln not in fc.lines:
                continue
            cols = sorted(draw(st.sets(st.integers(1, 60), min_size=3, max_size=6)))
            ids = [f"go:{ln}.{a},{ln}.{b}" for a, b in itertools.pairwise(cols)]
            covered = draw(st.sets(st.sampled_from(ids), min_size=1)) if fc.lines[ln] else set()
            fc.branches[ln] = Branches.from_ids(frozenset(covered), frozenset(ids))
    return report


@PROPERTY_SETTINGS
@given(go_reports(max_hits=1))
def test_parsing_what_the_go_writer_emits_in_set_mode_gives_back_the_model(
    report: Report,
) -> None:
    assert parse_report(to_go(report, mode="set")) == report


taken = st.lists(st.integers(0, 3), min_size=2, max_size=4).filter(lambda t: len(t) % 2 == 0)
line = st.tuples(st.integers(0, 5), st.none() | taken.map(tuple))
runs: st.SearchStrategy[Run] = st.dictionaries(
    st.sampled_from(["src/a.x", "src/b.x", "lib/c.x"]),
    st.dictionaries(st.integers(1, 60), line, min_size=1, max_size=20),
    min_size=1,
    max_size=3,
)


#: Runs without branches, for the formats that say none.
line_runs: st.SearchStrategy[Run] = runs.map(
    lambda run: {
        path: {ln: (hits, None) for ln, (hits, _) in lines.items()} for path, lines in run.items()
    }
)


#: Runs whose branches ran only on lines that ran.
consistent_runs: st.SearchStrategy[Run] = runs.map(
    lambda run: {
        path: {ln: (h, t if h or not t else tuple(0 for _ in t)) for ln, (h, t) in lines.items()}
        for path, lines in run.items()
    }
)


def reference(run: Run) -> tuple[Totals, int, int]:
    """Totals counted line by line from the run itself (a branch line: a line
    with branches), and branches total/covered."""
    lines = hits = misses = partials = branches = covered = branch_lines = 0
    for file_lines in run.values():
        for count, took in file_lines.values():
            lines += 1
            branch_lines += bool(took)
            missed = bool(took) and any(t == 0 for t in took)
            if count == 0:
                misses += 1
            elif missed:
                partials += 1
            else:
                hits += 1
            branches += len(took or ())
            covered += sum(1 for t in took or () if t)
    return Totals(len(run), lines, hits, misses, partials, branch_lines), branches, covered


#: What each format can say exactly: models of the older formats (branch ids
#: of the format's own scheme, or counts only), plain runs of the newer ones.
WRITTEN: dict[str, st.SearchStrategy[Report] | st.SearchStrategy[Run]] = {
    "lcov": reports(branch_strategy=branches(id_schemes=("lcov",)), min_files=1),
    "coverage_json": reports(
        max_hits=1, branch_strategy=branches(id_schemes=("arc",)), min_files=1
    ),
    "go": go_reports(max_hits=50),  # count mode; set mode below
    "cobertura": reports(branch_strategy=branches(count_only=True), min_files=1),
    "jacoco": reports(max_hits=1, branch_strategy=branches(count_only=True), min_files=1),
    **dict.fromkeys(RUN_FORMATS, runs),
    **dict.fromkeys(LINE_FORMATS, line_runs),
    **dict.fromkeys(CONSISTENT_FORMATS, consistent_runs),
    **{fmt: runs.map(says) for fmt, says in SAYS.items()},  # what each can say
}


def parsed(fmt: str, run: Run) -> Report:
    """A plain run written in one of the newer formats, parsed."""
    return parse_report(WRITERS[fmt](run))  # type: ignore[arg-type]  # RUN_FORMATS take a Run


def test_every_format_of_the_writer_registry_is_checked() -> None:
    assert set(WRITTEN) == set(WRITERS)


@pytest.mark.parametrize("fmt", sorted(WRITERS))
def test_parsing_what_a_writer_emits_gives_back_what_was_written(fmt: str) -> None:
    @PROPERTY_SETTINGS
    @given(WRITTEN[fmt])
    def check(written: Report | Run) -> None:
        report = parse_report(WRITERS[fmt](written))  # type: ignore[arg-type]  # a Run: RUN_FORMATS
        if isinstance(written, Report):
            assert report == written
            return
        totals, branches, covered = reference(written)
        assert report.totals() == totals
        found = [b for fc in report.files.values() for b in fc.branches.values()]
        assert (sum(b.total for b in found), sum(b.covered for b in found)) == (branches, covered)

    check()


@pytest.mark.parametrize("fmt", RUN_FORMATS)
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


@pytest.mark.parametrize("fmt", ["istanbul", "simplecov", "llvm", "gcov", "opencover", "gcov_text"])
def test_a_branch_taken_in_one_run_and_its_sibling_in_another_merge_to_covered(fmt: str) -> None:
    first = parsed(fmt, {"a.x": {3: (1, (1, 0))}})
    first.merge(parsed(fmt, {"a.x": {3: (1, (0, 2))}}))
    br = first.files["a.x"].branches[3]
    assert (br.covered, br.total) == (2, 2)
    assert first.totals().partials == 0
