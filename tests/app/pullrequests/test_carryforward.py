"""The carryforward rule alone: which ancestor's coverage each flag takes, and the sum.

The merge that reads the ancestors from the database is tested in
``tests/app/merge/test_carryforward.py``.
"""

from __future__ import annotations

from app.coverage import FileCoverage, Report, codec
from app.coverage.columnar import Part
from app.pullrequests.carryforward import (
    pick_carried,
    uses_carryforward,
    with_carried,
    within_paths,
)
from app.pullrequests.config import parse_codecov_yaml

CONFIG = parse_codecov_yaml(
    "flags:\n  ui:\n    carryforward: true\n    paths: [web/]\n"
    "  unit:\n    carryforward: true\n  e2e:\n    carryforward: false\n"
)


def blob(files: dict[str, dict[int, int]]) -> bytes:
    part = Part.from_report(
        Report({p: FileCoverage(dict(lines), {}) for p, lines in files.items()})
    )
    return codec.dump_columns(part.files)


def lines(report: bytes) -> dict[str, dict[int, int]]:
    return {p: dict(f.lines) for p, f in codec.load_part(report).to_report().files.items()}


def test_each_flag_takes_the_nearest_ancestor_that_has_it_within_its_paths() -> None:
    ancestors = [
        ("1" * 40, [("unit", blob({"core/a.py": {1: 1}})), ("ui", blob({"core/a.py": {1: 1}}))]),
        ("2" * 40, [("unit", blob({"core/a.py": {1: 0}})), ("ui", blob({"web/x.js": {1: 1}}))]),
        ("3" * 40, [("e2e", blob({"core/e.py": {1: 1}})), ("ui", blob({"web/y.js": {1: 1}}))]),
    ]

    carried = pick_carried(CONFIG, ancestors, exclude=())

    # ui at 1 has nothing under web/: the next ancestor's; e2e is not carried forward
    assert [(c.flag, c.from_sha) for c in carried] == [("ui", "2" * 40), ("unit", "1" * 40)]
    assert lines(carried[0].report) == {"web/x.js": {1: 1}}
    assert carried[0].totals["lines"] == 1 and carried[0].totals["hits"] == 1


def test_a_flag_the_commit_has_itself_is_not_carried() -> None:
    ancestors = [("1" * 40, [("unit", blob({"a.py": {1: 1}})), ("ui", None)])]
    assert pick_carried(CONFIG, ancestors, exclude={"unit"}) == []


def test_a_file_without_carryforward_flags_never_reads_an_ancestor() -> None:
    assert uses_carryforward(CONFIG)
    assert not uses_carryforward(parse_codecov_yaml("flags:\n  e2e:\n    paths: [e2e/]\n"))
    assert uses_carryforward(
        parse_codecov_yaml("flag_management:\n  default_rules:\n    carryforward: true\n")
    )


def test_the_commits_report_is_its_own_uploads_plus_each_carried_flag() -> None:
    own = codec.load_part(blob({"core/a.py": {1: 1, 2: 0}})).files
    full = with_carried(own, [blob({"web/x.js": {1: 1}}), None, blob({"core/a.py": {2: 3}})])
    assert lines(codec.dump_columns(full.files)) == {
        "core/a.py": {1: 1, 2: 3},
        "web/x.js": {1: 1},
    }
    assert full.totals().hits == 3
    assert within_paths(blob({"core/a.py": {1: 1}}), ("web/",)) is None
