"""Diffs: real ``git diff`` output, GitHub's and GitLab's compare shapes."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from app.pullrequests.diff import (
    ADDED,
    MODIFIED,
    REMOVED,
    RENAMED,
    DiffError,
    from_github_compare,
    from_gitlab_compare,
    parse_patch,
    parse_unified_diff,
)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "config", "user.email", "t@example.com")
    git(tmp_path, "config", "user.name", "t")
    git(tmp_path, "config", "core.quotePath", "true")
    return tmp_path


def write(repo: Path, path: str, lines: list[str] | bytes, *, newline: bool = True) -> None:
    target = repo / path
    target.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(lines, bytes):
        target.write_bytes(lines)
    else:
        target.write_text("\n".join(lines) + ("\n" if newline else ""))


def commit(repo: Path) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "c")
    return git(repo, "rev-parse", "HEAD").strip()


def numbered(n: int, prefix: str = "line") -> list[str]:
    return [f"{prefix} {i}" for i in range(1, n + 1)]


def test_a_real_git_diff_gives_added_removed_lines_and_statuses(repo: Path) -> None:
    write(repo, "src/app.py", numbered(30))
    write(repo, "src/gone.py", numbered(3, "gone"))
    write(repo, "src/old name.py", numbered(40, "keep"))
    write(repo, "café.py", numbered(2))
    write(repo, "logo.png", b"\x89PNG\x00\x01")
    base = commit(repo)
    app = numbered(30)
    app[4:6] = ["new 5", "new 6", "new 7"]  # lines 5, 6 replaced by three
    del app[19]  # head line 20 = base line 19, removed
    app.append("tail")
    write(repo, "src/app.py", app, newline=False)
    (repo / "src/gone.py").unlink()
    git(repo, "mv", "src/old name.py", "src/new name.py")
    renamed = numbered(40, "keep")
    renamed[9] = "changed 10"
    write(repo, "src/new name.py", renamed)
    write(repo, "src/added.py", numbered(4))
    write(repo, "café.py", ["x", "line 2"])
    write(repo, "logo.png", b"\x89PNG\x00\x02")
    head = commit(repo)

    diff = parse_unified_diff(git(repo, "diff", "-M", base, head))

    assert set(diff.files) == {
        "src/app.py",
        "src/gone.py",
        "src/new name.py",
        "src/added.py",
        "café.py",
        "logo.png",
    }
    app_diff = diff.files["src/app.py"]
    assert app_diff.status == MODIFIED and app_diff.previous_path is None
    # head: 1-4 same, 5,6,7 new, then base 7.. shifted by +1; base 20 gone; "tail" at the end
    assert app_diff.added == [5, 6, 7, 31]
    assert app_diff.removed == [5, 6, 19]
    assert app_diff.head_line(4) == 4
    assert app_diff.head_line(5) is None
    assert app_diff.head_line(7) == 8 and app_diff.head_line(18) == 19
    assert app_diff.head_line(19) is None
    assert app_diff.head_line(20) == 20 and app_diff.head_line(25) == 25
    assert app_diff.head_line(30) == 30
    assert diff.files["src/gone.py"].status == REMOVED
    assert diff.files["src/gone.py"].removed == [1, 2, 3]
    assert diff.files["src/gone.py"].head_line(1) is None
    moved = diff.files["src/new name.py"]
    assert (moved.status, moved.previous_path) == (RENAMED, "src/old name.py")
    assert moved.added == [10] and moved.removed == [10]
    assert moved.head_line(11) == 11
    assert diff.files["src/added.py"].status == ADDED
    assert diff.files["src/added.py"].added == [1, 2, 3, 4]
    assert diff.files["café.py"].added == [1]
    assert diff.files["logo.png"].binary and diff.files["logo.png"].added == []
    assert set(diff.by_base_path()) == {
        "src/app.py",
        "src/gone.py",
        "src/old name.py",
        "café.py",
        "logo.png",
    }


def test_an_insertion_shifts_only_the_lines_after_it(repo: Path) -> None:
    write(repo, "a.py", numbered(10))
    base = commit(repo)
    lines = numbered(10)
    lines[5:5] = ["inserted a", "inserted b"]  # after base line 5
    write(repo, "a.py", lines)
    head = commit(repo)
    fd = parse_unified_diff(git(repo, "diff", "-U0", base, head)).files["a.py"]
    assert fd.added == [6, 7] and fd.removed == []
    assert [fd.head_line(n) for n in (1, 5, 6, 10)] == [1, 5, 8, 12]


def test_github_compare_files_become_a_diff_and_missing_patches_are_omitted() -> None:
    payload = {
        "files": [
            {
                "filename": "src/a.py",
                "status": "modified",
                "additions": 2,
                "deletions": 1,
                "patch": "@@ -1,3 +1,4 @@\n a\n-b\n+B\n+C\n c",
            },
            {
                "filename": "src/b.py",
                "previous_filename": "src/old_b.py",
                "status": "renamed",
                "additions": 0,
                "deletions": 0,
            },
            {"filename": "big.py", "status": "modified", "additions": 9000, "deletions": 0},
            {"filename": "gone.py", "status": "removed", "additions": 0, "deletions": 5},
        ]
    }
    diff = from_github_compare(payload)
    assert diff.files["src/a.py"].added == [2, 3] and diff.files["src/a.py"].removed == [2]
    assert diff.files["src/b.py"].previous_path == "src/old_b.py"
    assert diff.omitted == ["big.py"] and "big.py" not in diff.files
    assert diff.files["gone.py"].status == REMOVED
    assert not diff.truncated
    many = {
        "files": [
            {"filename": f"f{i}", "status": "added", "patch": "@@ -0,0 +1 @@\n+x"}
            for i in range(300)
        ]
    }
    assert from_github_compare(many).truncated


def test_gitlab_compare_diffs_become_a_diff_and_too_large_ones_are_omitted() -> None:
    payload = {
        "diffs": [
            {
                "old_path": "lib/a.rb",
                "new_path": "lib/a.rb",
                "new_file": False,
                "renamed_file": False,
                "deleted_file": False,
                "diff": "@@ -10,2 +10,3 @@ def x\n x\n+y\n z\n",
            },
            {
                "old_path": "lib/new.rb",
                "new_path": "lib/new.rb",
                "new_file": True,
                "renamed_file": False,
                "deleted_file": False,
                "diff": "@@ -0,0 +1,2 @@\n+a\n+b\n",
            },
            {
                "old_path": "huge.rb",
                "new_path": "huge.rb",
                "new_file": False,
                "renamed_file": False,
                "deleted_file": False,
                "diff": "",
                "too_large": True,
            },
        ]
    }
    diff = from_gitlab_compare(payload)
    assert diff.files["lib/a.rb"].added == [11]
    assert diff.files["lib/a.rb"].head_line(11) == 12
    assert diff.files["lib/new.rb"].status == ADDED and diff.files["lib/new.rb"].added == [1, 2]
    assert diff.omitted == ["huge.rb"]


def test_a_hunk_that_does_not_add_up_is_a_clear_error() -> None:
    with pytest.raises(DiffError, match=re.escape("a.py: the hunk at -1 +1 ends early")):
        parse_patch("a.py", MODIFIED, "@@ -1,3 +1,3 @@\n a\n")
    with pytest.raises(DiffError, match="expected a hunk header"):
        parse_patch("a.py", MODIFIED, "garbage")
