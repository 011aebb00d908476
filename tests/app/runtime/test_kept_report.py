"""The merged report a process's finishers keep for their commit's next pass."""

from __future__ import annotations

from app.coverage.columnar import Columns
from app.runtime.kept_report import KeptReport

FILES: dict[str, Columns] = {"a.py": ([1, 2], [3, 0], {})}


def test_a_kept_report_is_taken_only_for_its_commit_and_version() -> None:
    kept = KeptReport()
    kept.keep(7, 2, FILES)

    assert kept.take(7, 1) is None and kept.take(7, 3) is None and kept.take(8, 2) is None
    assert kept.take(7, 2) == FILES


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


def test_keeping_another_commits_report_lets_the_windows_of_the_last_one_go() -> None:
    kept = KeptReport()
    kept.windows(7)["a.py"] = (FILES["a.py"], [])
    kept.keep(7, 2, FILES)
    assert set(kept.windows(7)) == {"a.py"}

    kept.keep(8, 1, FILES)
    assert kept.windows(7) == {}
