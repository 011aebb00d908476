"""The merged report a process's finishers keep for their commit's next pass."""

from __future__ import annotations

from app.coverage.columnar import Columns
from app.runtime.kept_report import KeptReport

FILES: dict[str, Columns] = {"a.py": ([1, 2], [3, 0], {})}


def test_a_kept_report_is_taken_only_for_its_commit_and_version() -> None:
    kept = KeptReport()
    kept.keep(7, 2, FILES)

    assert kept.take(8, 2) is None
    assert kept.take(7, 2) == FILES
    kept.keep(7, 2, FILES)
    # The report row is at another version: another process merged since,
    # and versions only grow, so the kept one is of no further use.
    assert kept.take(7, 3) is None and kept.take(7, 2) is None


def test_a_kept_report_is_taken_once() -> None:
    # The pass that takes it frees each file's old columns as it merges, so a
    # report it fails to store is gone: the next pass decodes the stored one.
    kept = KeptReport()
    kept.keep(7, 2, FILES)

    assert kept.take(7, 2) is FILES
    assert kept.take(7, 2) is None


def test_forgetting_a_commit_leaves_another_commits_kept_report() -> None:
    kept = KeptReport()
    kept.keep(7, 2, FILES)

    kept.forget(8)
    assert kept.take(7, 2) == FILES
    kept.forget(7)
    assert kept.take(7, 2) is None


def test_a_commits_encoded_windows_are_its_own_and_forgotten_with_it() -> None:
    kept = KeptReport()
    kept.windows(7)["a.py"] = (FILES["a.py"], [])
    kept.windows(7)["b.py"] = (FILES["a.py"], [])

    kept.touched(7, ["a.py"])
    assert set(kept.windows(7)) == {"b.py"}
    kept.touched(8, ["b.py"])
    assert set(kept.windows(7)) == {"b.py"}
    kept.forget(7)
    assert kept.windows(7) == {}


def test_several_commits_reports_are_kept_at_once() -> None:
    # A steady arrival of matrices: a worker's passes go from one trickling
    # commit to another and back.
    kept = KeptReport()
    other: dict[str, Columns] = {"b.py": ([1], [1], {})}
    kept.keep(7, 2, FILES)
    kept.windows(7)["a.py"] = (FILES["a.py"], [])
    kept.keep(8, 1, other)

    assert kept.take(7, 2) is FILES and kept.take(8, 1) is other
    assert set(kept.windows(7)) == {"a.py"}


def test_past_max_commits_the_least_recently_used_commit_is_let_go() -> None:
    kept = KeptReport(max_commits=2)
    kept.keep(7, 1, FILES)
    kept.keep(8, 1, FILES)
    kept.windows(7)  # used: 8 is now the least recently used
    kept.keep(9, 1, FILES)

    assert kept.take(8, 1) is None
    assert kept.take(7, 1) is FILES and kept.take(9, 1) is FILES


def test_past_max_lines_older_commits_go_but_the_last_used_stays_whatever_its_size() -> None:
    big: dict[str, Columns] = {"big.py": (list(range(1, 101)), [1] * 100, {})}
    kept = KeptReport(max_lines=50)
    kept.keep(7, 1, FILES)  # 2 lines
    kept.keep(8, 1, big)  # 100 lines: over the bound alone

    assert kept.take(7, 1) is None
    assert kept.take(8, 1) is big


def test_windows_stored_count_toward_the_bound() -> None:
    # A burst's first settled version is forgotten, then its windows are
    # stored: their columns are held, and counted.
    kept = KeptReport(max_lines=50)
    kept.keep(7, 1, FILES)
    kept.windows(8)["big.py"] = (FILES["a.py"], [])
    kept.windows_stored(8, 100)

    assert kept.take(7, 1) is None and set(kept.windows(8)) == {"big.py"}


def test_a_report_of_another_version_is_let_go_and_its_windows_stay() -> None:
    # Another process wrote a newer version: the kept report is of no use,
    # its windows still are to files whose lines did not change.
    kept = KeptReport()
    kept.keep(7, 2, FILES)
    kept.windows(7)["a.py"] = (FILES["a.py"], [])

    assert kept.take(7, 3) is None
    assert kept.take(7, 2) is None
    assert set(kept.windows(7)) == {"a.py"}
