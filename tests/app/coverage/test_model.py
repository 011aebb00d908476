"""The model's merge rules, totals and serialised form."""

from __future__ import annotations

import zlib

import pytest

from app.coverage import Branches, FileCoverage, Report, Totals, codec
from app.coverage.model import file_totals

pytestmark = pytest.mark.timeout(10)

IDS = frozenset({"lcov:0,0", "lcov:0,1"})


def test_identity_branches_union_the_covered_ones() -> None:
    a = Branches.from_ids(frozenset({"lcov:0,0"}), IDS)
    b = Branches.from_ids(frozenset({"lcov:0,1"}), IDS)
    assert (a.merged(b).covered, a.merged(b).total) == (2, 2)


def test_count_only_branches_keep_the_maximum() -> None:
    assert Branches(1, 2).merged(Branches(2, 4)) == Branches(2, 4)
    assert Branches(1, 2).merged(Branches(1, 2)) == Branches(1, 2)


def test_mixing_identity_and_count_only_branches_is_associative() -> None:
    """The old rule dropped identities when a count-only side came in between."""
    a = Branches.from_ids(frozenset({"lcov:0,0"}), IDS)
    x = Branches(1, 2)
    b = Branches.from_ids(frozenset({"lcov:0,1"}), IDS)
    left = a.merged(x).merged(b)
    right = a.merged(x.merged(b))
    assert left == right
    assert (left.covered, left.total) == (2, 2)


def test_identities_of_different_schemes_are_not_added_together() -> None:
    """LCOV's (block, branch) and coverage.py's arcs name the same two branches."""
    lcov = Branches.from_ids(frozenset({"lcov:0,0"}), IDS)
    arcs = Branches.from_ids(frozenset({"arc:5"}), frozenset({"arc:5", "arc:-1"}))
    both = lcov.merged(arcs)
    assert (both.covered, both.total) == (1, 2)


def test_branches_are_immutable() -> None:
    with pytest.raises(AttributeError):
        Branches(1, 2).covered = 2  # type: ignore[misc]


def test_totals_count_hits_misses_and_partials_as_codecov_does() -> None:
    fc = FileCoverage(
        lines={1: 3, 2: 0, 3: 1, 4: 2, 5: 0},
        branches={3: Branches(1, 2), 4: Branches(2, 2), 5: Branches(0, 2)},
    )
    report = Report({"a.py": fc, "b.py": FileCoverage({1: 1})})
    assert report.totals() == Totals(files=2, lines=6, hits=3, misses=2, partials=1, branches=3)
    assert report.totals().to_dict()["coverage"] == 50.0
    assert report.file_totals()["a.py"].coverage == 40.0
    assert Totals().coverage == 0.0
    assert Report().to_json() == {"totals": Totals().to_dict(), "files": {}}


def test_branches_count_the_lines_that_carry_branches_as_codecovs_totals_do() -> None:
    # Codecov's ReportTotals.branches: lines of type "b", covered or not; a
    # branch record on a line that is not a line record is not a line.
    fc = FileCoverage(
        lines={1: 1, 2: 1, 3: 0, 4: 1},
        branches={2: Branches(2, 2), 3: Branches(0, 4), 9: Branches(1, 2)},
    )
    assert file_totals(fc).branches == 2
    assert Report({"a.py": fc}).to_json()["totals"]["branches"] == 2
    assert (Totals(branches=2) + Totals(branches=3)).branches == 5


def test_merging_adds_hits_and_leaves_the_other_report_alone() -> None:
    a = Report({"a.py": FileCoverage({1: 1, 2: 0})})
    b = Report({"a.py": FileCoverage({2: 2, 3: 0}), "b.py": FileCoverage({1: 1})})
    a.merge(b)
    a.files["b.py"].lines[1] = 99
    assert a.files["a.py"].lines == {1: 1, 2: 2, 3: 0}
    assert b.files["b.py"].lines == {1: 1}


def test_the_serialised_form_round_trips_and_rejects_corruption() -> None:
    report = Report({"a.py": FileCoverage({1: 2, 7: 0}, {1: Branches.from_ids(frozenset(), IDS)})})
    assert codec.load(codec.dump(report)) == report
    for corrupt in (b"not zlib", zlib.compress(b"[]"), zlib.compress(b'{"v": 99, "f": {}}')):
        with pytest.raises(ValueError):
            codec.load(corrupt)


def test_the_older_serialised_version_is_still_read() -> None:
    v1 = (
        b'{"v":1,"f":{"a.py":[[1,2,7,0],'
        b'{"1":[1,2,["lcov:0,0"],["lcov:0,0","lcov:0,1"]],"7":[0,3,null,null]}]}}'
    )
    report = codec.load(zlib.compress(v1))
    assert report.files["a.py"].lines == {1: 2, 7: 0}
    assert report.files["a.py"].branches == {
        1: Branches.from_ids(frozenset({"lcov:0,0"}), IDS),
        7: Branches(0, 3),
    }


def test_missed_identities_round_trip_and_version_2_is_still_read() -> None:
    missed = Branches.from_missed(3, frozenset({"arc:7"}))
    report = Report({"a.py": FileCoverage({1: 1, 2: 0}, {1: missed, 2: Branches(0, 2)})})
    loaded = codec.load(codec.dump(report))
    assert loaded == report
    assert loaded.files["a.py"].branches[1].missed_ids == frozenset({"arc:7"})
    v2 = b'{"v":2,"s":[["lcov:0,0"]],"f":{"a.c":[[1,1],[1,1,1,0,0]]}}'
    branches = codec.load(zlib.compress(v2)).files["a.c"].branches
    assert branches == {1: Branches.from_ids(frozenset({"lcov:0,0"}), frozenset({"lcov:0,0"}))}


def test_runs_that_each_miss_a_different_named_branch_merge_to_all_covered() -> None:
    first = Branches.from_missed(2, frozenset({"arc:731"}))
    second = Branches.from_missed(2, frozenset({"arc:733"}))
    assert (first.covered, first.total) == (1, 2)
    merged = first.merged(second)
    assert (merged.covered, merged.total) == (2, 2)
    assert merged.missed_ids == frozenset()
    # a run that missed both changes nothing; count-only runs still join by maximum
    assert merged.merged(Branches.from_missed(2, frozenset({"arc:731", "arc:733"}))) == merged
    assert first.merged(Branches(0, 2)).covered == 1
    with pytest.raises(ValueError):
        Branches.from_missed(1, frozenset({"arc:1", "arc:2"}))


def test_equal_branch_id_sets_are_stored_once_and_shared_after_loading() -> None:
    fc = FileCoverage({ln: 1 for ln in range(1, 101)})
    for ln in fc.lines:
        fc.branches[ln] = Branches.from_ids(frozenset({"lcov:0,0"}), frozenset(IDS))
    blob = codec.dump(Report({"a.c": fc}))
    assert zlib.decompress(blob).count(b"lcov:0,1") == 1
    loaded = codec.load(blob).files["a.c"].branches
    assert len({id(b.all_ids) for b in loaded.values()}) == 1
    with pytest.raises(ValueError):
        codec.load(zlib.compress(b'{"v":2,"s":[],"f":{"a":[[1,1],[1,0,1,5,5]]}}'))
