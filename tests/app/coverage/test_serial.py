"""The JSON stored forms of a report: version 3 written and read, 1 and 2 still read."""

from __future__ import annotations

import json
import zlib
from typing import Any

import pytest

from app.coverage import Branches, FileCoverage, Report
from app.coverage.serial import VERSION_V3, IdSets, dump_v3, load_v1, load_v2, load_v3

pytestmark = pytest.mark.timeout(10)

IDS = frozenset({"lcov:0,0", "lcov:0,1"})


def payload(blob: bytes) -> Any:
    return json.loads(zlib.decompress(blob))


def a_report() -> Report:
    return Report(
        {
            "a.py": FileCoverage(
                {1: 2**70, 2: 0, 3: 5},
                {
                    1: Branches.from_ids(frozenset({"lcov:0,0"}), IDS),
                    2: Branches(0, 3),
                    3: Branches.from_missed(3, frozenset({"arc:7"})),
                },
            ),
            "b/c.go": FileCoverage({4: 1}, {4: Branches.from_ids(IDS, IDS)}),
        }
    )


def test_version_3_gives_back_every_count_identity_and_missed_branch() -> None:
    report = a_report()
    stored = payload(dump_v3(report))
    assert stored["v"] == VERSION_V3 == 3
    loaded = load_v3(stored)
    assert loaded == report
    assert loaded.files["a.py"].lines[1] == 2**70  # JSON holds any integer
    assert loaded.files["a.py"].branches[3].missed_ids == frozenset({"arc:7"})
    assert loaded.files["a.py"].branches[2].all_ids is None  # count-only stays count-only


def test_each_distinct_id_set_is_stored_once_and_loaded_as_one_shared_set() -> None:
    fc = FileCoverage({ln: 1 for ln in range(1, 51)})
    for ln in fc.lines:
        fc.branches[ln] = Branches.from_ids(frozenset({"lcov:0,0"}), IDS)
    stored = payload(dump_v3(Report({"a.c": fc})))
    assert sorted(stored["s"]) == [["lcov:0,0"], ["lcov:0,0", "lcov:0,1"]]
    loaded = load_v3(stored).files["a.c"].branches
    assert len({id(b.all_ids) for b in loaded.values()}) == 1


def test_id_sets_index_each_set_once_in_sorted_form_and_none_as_minus_one() -> None:
    sets = IdSets()
    assert sets.index(None) == -1
    assert sets.index(frozenset({"b", "a"})) == 0
    assert sets.index(frozenset({"c"})) == 1
    assert sets.index(frozenset({"a", "b"})) == 0
    assert sets.table == [["a", "b"], ["c"]]
    missed = Branches.from_missed(4, frozenset({"c"}))
    assert sets.record(9, missed) == (9, 3, 4, -1, -1, 1, 4)
    some = Branches.from_ids(frozenset({"lcov:0,0"}), IDS)
    assert sets.record(2, some) == (2, 1, 2, 2, 3, -1, 0)
    assert sets.table == [["a", "b"], ["c"], ["lcov:0,0"], ["lcov:0,0", "lcov:0,1"]]


def test_version_2_without_missed_identities_is_still_read() -> None:
    stored = {
        "v": 2,
        "s": [["lcov:0,0"], sorted(IDS)],
        "f": {"a.c": [[1, 1, 2, 0], [1, 1, 2, 0, 1, 2, 0, 3, -1, -1]]},
    }
    fc = load_v2(stored).files["a.c"]
    assert fc.lines == {1: 1, 2: 0}
    assert fc.branches == {1: Branches.from_ids(frozenset({"lcov:0,0"}), IDS), 2: Branches(0, 3)}


def test_version_1_with_branches_by_line_key_is_still_read() -> None:
    stored = {
        "v": 1,
        "f": {
            "a.py": [
                [1, 2, 7, 0],
                {"1": [1, 2, ["lcov:0,0"], sorted(IDS)], "7": [0, 3, None, None]},
            ]
        },
    }
    fc = load_v1(stored).files["a.py"]
    assert fc.lines == {1: 2, 7: 0}
    assert fc.branches == {1: Branches.from_ids(frozenset({"lcov:0,0"}), IDS), 7: Branches(0, 3)}


@pytest.mark.parametrize(
    ("load", "stored", "error"),
    [
        (load_v3, {"s": [], "f": {"a": [[1, 1], [1, 3, 2, -1, -1, -1, 0]]}}, ValueError),
        (load_v3, {"s": [], "f": {"a": [[1, 1], [1, 0, 2, -1, -1, -1, -1]]}}, ValueError),
        (load_v3, {"s": [], "f": {"a": [[1, 1], [1, 0, 2, -1, -1]]}}, ValueError),
        (load_v3, {"s": [], "f": {"a": [[1, 1, 2], []]}}, ValueError),
        (load_v2, {"s": [], "f": {"a": [[1, 1], [1, -1, 2, -1, -1]]}}, ValueError),
        (load_v2, {"s": [], "f": {"a": [[1, 1], [1, 1, 2, 5, 5]]}}, IndexError),
        (load_v1, {"f": {"a": [[1, 1], {"1": [1.5, 2, None, None]}]}}, ValueError),
        (load_v1, {"f": {"a": [[1, 1], {"1": ["1", "2", None, None]}]}}, ValueError),
    ],
    ids=[
        "v3 covered over total",
        "v3 negative missed total",
        "v3 short branch record",
        "v3 odd line list",
        "v2 negative covered",
        "v2 set index out of range",
        "v1 fractional covered",
        "v1 counts as text",
    ],
)
def test_a_corrupt_stored_form_raises_rather_than_loading_wrong_numbers(
    load: Any, stored: dict[str, Any], error: type[Exception]
) -> None:
    """Counts are checked here; ``codec.load`` reports any of these as a ValueError."""
    with pytest.raises(error):
        load(stored)
