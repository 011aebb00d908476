from __future__ import annotations

from app.coverage.model import FileCoverage, Report
from app.coverage.network_paths import NetworkPaths

NETWORK = [
    "src/app/main.py",
    "src/app/util.py",
    "src/main/java/com/acme/Foo.java",
    "lib/a/helpers.py",
    "lib/b/helpers.py",
    "README.md",
]


def test_a_listed_path_is_kept() -> None:
    assert NetworkPaths(NETWORK).resolve("src/app/main.py") == ("src/app/main.py", "listed")


def test_an_absolute_ci_runner_path_resolves_to_the_listed_file_it_ends_with() -> None:
    paths = NetworkPaths(NETWORK)
    assert paths.resolve("/home/runner/work/app/app/src/app/main.py") == (
        "src/app/main.py",
        "resolved",
    )
    assert paths.resolve("C:\\a\\build\\src\\app\\util.py") == ("src/app/util.py", "resolved")


def test_a_jacoco_package_path_resolves_to_its_source_file() -> None:
    assert NetworkPaths(NETWORK).resolve("com/acme/Foo.java") == (
        "src/main/java/com/acme/Foo.java",
        "resolved",
    )


def test_an_ambiguous_ending_is_kept_as_it_is() -> None:
    assert NetworkPaths(NETWORK).resolve("/ci/helpers.py") == ("/ci/helpers.py", "ambiguous")


def test_a_longer_ending_disambiguates() -> None:
    assert NetworkPaths(NETWORK).resolve("/ci/b/helpers.py") == ("lib/b/helpers.py", "resolved")


def test_a_path_sharing_no_ending_is_unknown() -> None:
    assert NetworkPaths(NETWORK).resolve("gen/parser.c") == ("gen/parser.c", "unknown")


def test_applying_renames_merges_files_that_resolve_alike_and_warns_of_the_rest() -> None:
    report = Report(
        {
            "/runner/src/app/main.py": FileCoverage({1: 1, 2: 0}),
            "src/app/main.py": FileCoverage({2: 3}),
            "/ci/helpers.py": FileCoverage({1: 1}),
            "gen/parser.c": FileCoverage({1: 0}),
        }
    )
    result = NetworkPaths(NETWORK).apply(report)
    assert report.files["src/app/main.py"].lines == {1: 1, 2: 3}
    assert sorted(report.files) == ["/ci/helpers.py", "gen/parser.c", "src/app/main.py"]
    assert result.renamed == {"/runner/src/app/main.py": "src/app/main.py"}
    assert result.warnings() == [
        "ambiguous path kept as is: /ci/helpers.py",
        "path not in the repository's file list, kept as is: gen/parser.c",
    ]


def test_the_memory_of_resolving_paths_grows_with_the_network_list_not_its_square() -> None:
    import tracemalloc

    # 4 listed paths of 4,000 segments (32 KB of text): keeping every ending
    # of every path would hold about 4 x 4,000 x 4 KB = 64 MB.
    deep = ["/".join(["d"] * 4_000 + [f"f{i}.py"]) for i in range(4)]
    report_path = "/ci/" + deep[2]
    size = sum(map(len, deep))

    tracemalloc.start()
    try:
        resolved = NetworkPaths(deep).resolve(report_path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()

    assert resolved == (deep[2], "resolved")
    assert peak < 10 * size + 256 * 1024, f"{peak} bytes for a {size}-byte list"


def test_the_longest_shared_ending_decides_among_many_listed_files() -> None:
    network = [f"pkg{i}/sub/mod.py" for i in range(50)] + ["only/here/mod.py", "x/unique.py"]
    paths = NetworkPaths(network)
    assert paths.resolve("/ci/pkg7/sub/mod.py") == ("pkg7/sub/mod.py", "resolved")
    assert paths.resolve("/ci/other/sub/mod.py") == ("/ci/other/sub/mod.py", "ambiguous")
    assert paths.resolve("/ci/here/mod.py") == ("only/here/mod.py", "resolved")
    assert paths.resolve("/ci/a/unique.py") == ("x/unique.py", "resolved")
    assert paths.resolve("/ci/a/nique.py") == ("/ci/a/nique.py", "unknown")
    assert paths.resolve("/ci/sub/mod.py") == ("/ci/sub/mod.py", "ambiguous")


def test_a_relative_path_the_list_cannot_place_is_tried_under_each_base_in_order() -> None:
    paths = NetworkPaths(["pkg/__init__.py", "tests/__init__.py", "docs/conf.py"])
    assert paths.resolve("__init__.py") == ("__init__.py", "ambiguous")
    assert paths.place("__init__.py", ("/ck/docs", "/ck/pkg", "/ck/tests")) == (
        "pkg/__init__.py",
        "resolved",
    )
    # the coverage file's directory first, as Codecov's path fixer tries it
    assert paths.place("__init__.py", ("/ck/pkg",), origin="/ck/tests") == (
        "tests/__init__.py",
        "resolved",
    )


def test_a_path_the_list_places_as_written_keeps_that_place_whatever_the_bases() -> None:
    paths = NetworkPaths(["pkg/mod.py", "pkg/__init__.py"])
    assert paths.place("mod.py", ("/ck/other",)) == ("pkg/mod.py", "resolved")


def test_no_base_placing_it_leaves_the_path_unplaced_with_its_own_verdict() -> None:
    paths = NetworkPaths(["a/__init__.py", "b/__init__.py"])
    assert paths.place("__init__.py", ("/ck/c",)) == ("__init__.py", "ambiguous")
    assert paths.place("/abs/__init__.py", ("/ck/a",)) == ("/abs/__init__.py", "ambiguous")
