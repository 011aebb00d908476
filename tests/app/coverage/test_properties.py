"""Merge laws and writer/parser round trips, checked by hypothesis."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.coverage import Branches, FileCoverage, Report, codec, parse_report
from app.coverage.model import scheme_size
from benchmarks.emit import to_cobertura, to_coverage_json, to_go, to_jacoco, to_lcov
from tests.support.coverage_strategies import PROPERTY_SETTINGS, branches, reports

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


@PROPERTY_SETTINGS
@given(reports(branch_strategy=branches(id_schemes=("lcov",)), min_files=1))
def test_parsing_what_the_lcov_writer_emits_gives_back_the_model(report: Report) -> None:
    assert parse_report(to_lcov(report)) == report


@PROPERTY_SETTINGS
@given(reports(max_hits=1, branch_strategy=branches(id_schemes=("arc",)), min_files=1))
def test_parsing_what_the_coverage_json_writer_emits_gives_back_the_model(report: Report) -> None:
    assert parse_report(to_coverage_json(report)) == report


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
@given(go_reports(max_hits=50))
def test_parsing_what_the_go_writer_emits_in_count_mode_gives_back_the_model(
    report: Report,
) -> None:
    assert parse_report(to_go(report, mode="count")) == report


@PROPERTY_SETTINGS
@given(go_reports(max_hits=1))
def test_parsing_what_the_go_writer_emits_in_set_mode_gives_back_the_model(
    report: Report,
) -> None:
    assert parse_report(to_go(report, mode="set")) == report


@PROPERTY_SETTINGS
@given(reports(branch_strategy=branches(count_only=True), min_files=1))
def test_parsing_what_the_cobertura_writer_emits_gives_back_the_model(report: Report) -> None:
    assert parse_report(to_cobertura(report)) == report


@PROPERTY_SETTINGS
@given(reports(max_hits=1, branch_strategy=branches(count_only=True), min_files=1))
def test_parsing_what_the_jacoco_writer_emits_gives_back_the_model(report: Report) -> None:
    assert parse_report(to_jacoco(report)) == report
