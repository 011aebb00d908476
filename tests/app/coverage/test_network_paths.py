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
