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
