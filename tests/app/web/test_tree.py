"""The commit page's file tree: totals per directory, the change against the
base and the view of one directory."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from app.coverage import Totals
from app.merge.report_summary import FileTotalsTable
from app.web.tree import VIEW_ENTRIES, DirectoryTree, directory_sums
from tests.app.web.conftest import Upload, lcov

pytestmark = pytest.mark.timeout(60)

BASE, HEAD = "1" * 40, "2" * 40


def table(files: dict[str, tuple[int, int]]) -> FileTotalsTable:
    """Per-file totals of ``{path: (lines, hits)}`` (the rest missed)."""
    return FileTotalsTable.from_totals(
        {p: Totals(1, lines, hits, lines - hits, 0) for p, (lines, hits) in files.items()}
    )


def test_a_directory_sums_every_file_below_it() -> None:
    sums = directory_sums(
        table({"a/b/c.py": (10, 5), "a/b/d.py": (10, 10), "a/e.py": (4, 0), "top.py": (6, 6)})
    )
    assert {d: (s.files, s.lines, s.hits) for d, s in sums.items()} == {
        "": (4, 30, 21),
        "a": (3, 24, 15),
        "a/b": (2, 20, 15),
    }
    assert sums["a/b"].coverage() == 75.0


def test_a_directory_changes_against_the_same_directory_at_the_base() -> None:
    base = table({"a/x.py": (10, 5), "gone/y.py": (2, 2)})
    head = table({"a/x.py": (10, 8), "new/z.py": (4, 1)})
    tree = DirectoryTree.build(head, base)
    assert tree.changes["a"] == 30.0
    assert tree.changes["new"] == 25.0  # added: its whole coverage, as an added file
    assert tree.changes[""] == pytest.approx(9 / 14 * 100 - 7 / 12 * 100, abs=1e-4)
    assert DirectoryTree.build(head, None).changes["a"] is None


def test_a_view_is_bounded_whatever_the_number_of_directories() -> None:
    head = table({f"d{i:04}/f.py": (i + 1, 0) for i in range(VIEW_ENTRIES * 2)})
    view = DirectoryTree.build(head, None).view("r/n", "s", "", {})
    assert len(view["node"]["directories"]) == VIEW_ENTRIES - 1
    assert view["node"]["more"] == VIEW_ENTRIES + 1
    assert "d0799" in [d["name"] for d in view["node"]["directories"]]  # the largest kept


def test_a_view_of_a_directory_links_its_parents_and_its_files() -> None:
    head = table({"src/app/main.py": (4, 4), "src/app/util/x.py": (2, 1), "README.py": (1, 0)})
    view = DirectoryTree.build(head, None).view("acme/web", "f" * 40, "src/app", {"sort": "misses"})
    assert [p["name"] for p in view["up"]] == ["src", "app"]
    assert view["up"][0]["href"] == "?sort=misses&dir=src#tree"
    assert [f["href"] for f in view["node"]["own_files"]] == [
        f"/acme/web/commit/{'f' * 40}/file/src/app/main.py"
    ]
    assert [d["path"] for d in view["node"]["directories"]] == ["src/app/util"]
    assert {r["name"] for r in view["regions"]} == {"util/", "main.py"}
    unknown = DirectoryTree.build(head, None).view("acme/web", "f", "no/such", {})
    assert unknown["directory"] == ""


def test_the_commit_page_shows_the_tree_and_a_treemap_linking_each_directory(
    client: TestClient, upload: Upload
) -> None:
    upload("acme/web", BASE, {"a.info": lcov("src/a.py", {1: 1, 2: 0})}, branch="main")
    upload(
        "acme/web",
        HEAD,
        {"a.info": lcov("src/a.py", {1: 1, 2: 1}) + lcov("lib/<b>.py", {1: 0})},
        branch="main",
        parent=BASE,
    )
    data = client.get(f"/api/v1/repos/acme/web/commits/{HEAD}").json()
    src = next(d for d in data["tree"]["node"]["directories"] if d["path"] == "src")
    assert (src["coverage"], src["change"]) == (100.0, 50.0)
    html = client.get(f"/acme/web/commit/{HEAD}").text
    treemap = html[
        html.index('class="treemap"') : html.index("</svg>", html.index('class="treemap"'))
    ]
    assert re.findall(r'<a href="([^"]+)"', treemap) == ["?dir=src#tree", "?dir=lib#tree"]
    assert "<b>" not in html and "lib/&lt;b&gt;.py" in html
    sub = client.get(f"/acme/web/commit/{HEAD}?dir=src").text
    assert 'aria-current="page">src</a>' in sub
    assert f'href="/acme/web/commit/{HEAD}/file/src/a.py"' in sub


def test_an_absolute_path_s_directories_are_viewed_and_linked_as_they_are() -> None:
    head = table({"/tmp/x/calc.c": (4, 2)})
    tree = DirectoryTree.build(head, None)
    view = tree.view("acme/web", "f", "/tmp/x", {})
    assert view["directory"] == "/tmp/x"
    assert [(p["name"], p["href"]) for p in view["up"]] == [
        ("tmp", "?dir=%2Ftmp#tree"),
        ("x", "?dir=%2Ftmp%2Fx#tree"),
    ]
    assert [f["name"] for f in view["node"]["own_files"]] == ["calc.c"]
