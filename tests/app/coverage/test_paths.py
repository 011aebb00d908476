"""Paths become repository-relative POSIX paths, so one file merges into one entry."""

from __future__ import annotations

import pytest

from app.coverage import Report, parse_report
from app.coverage.paths import PathNormaliser, clean, place_under_checkout

pytestmark = pytest.mark.timeout(10)


@pytest.mark.parametrize(
    ("raw", "clean_path"),
    [
        ("src/a.py", "src/a.py"),
        ("./src/a.py", "src/a.py"),
        ("src\\pkg\\a.py", "src/pkg/a.py"),
        (".\\src\\a.py", "src/a.py"),
        ("src//pkg/./a.py", "src/pkg/a.py"),
        ("src/pkg/../a.py", "src/a.py"),
        ("../outside/a.py", "outside/a.py"),
        ("../../../victim/private/contents/secret.py", "victim/private/contents/secret.py"),
        ("src/../../../x.py", "x.py"),
        ("/../../etc/passwd", "/etc/passwd"),
        ("C:\\..\\..\\x.py", "C:/x.py"),
        ("/abs/src/a.py", "/abs/src/a.py"),
        ("C:\\work\\repo\\a.py", "C:/work/repo/a.py"),
        ("  src/a.py\n", "src/a.py"),
    ],
)
def test_a_path_is_cleaned_to_posix_form(raw: str, clean_path: str) -> None:
    assert clean(raw) == clean_path


def test_an_absolute_path_under_a_root_loses_the_root_and_the_longest_root_wins() -> None:
    normalise = PathNormaliser(["/home/ci/repo", "/home/ci/repo/src", "C:\\build\\repo\\"])
    assert normalise("/home/ci/repo/lib/a.py") == "lib/a.py"
    assert normalise("/home/ci/repo/src/b.py") == "b.py"
    assert normalise("C:\\build\\repo\\x\\y.cs") == "x/y.cs"
    assert normalise("/home/ci/repository/a.py") == "/home/ci/repository/a.py"
    assert normalise("/elsewhere/a.py") == "/elsewhere/a.py"


def cobertura(source: str, filename: str) -> bytes:
    return (
        f'<coverage><sources><source>{source}</source></sources><packages><package name="p">'
        f'<classes><class filename="{filename}"><lines><line number="1" hits="1"/>'
        f'<line number="2" hits="0"/></lines></class></classes></package></packages></coverage>'
    ).encode()


def test_cobertura_absolute_filenames_lose_their_source_root() -> None:
    report = parse_report(cobertura("/builds/org/repo", "/builds/org/repo/src/a.py"))
    assert set(report.files) == {"src/a.py"}


def test_cobertura_relative_filenames_join_a_relative_source() -> None:
    assert set(parse_report(cobertura("backend", "app/a.py")).files) == {"backend/app/a.py"}
    assert set(parse_report(cobertura(".", "app/a.py")).files) == {"app/a.py"}


def test_cobertura_filenames_under_an_absolute_source_are_placed_by_a_given_repository_root() -> (
    None
):
    raw = cobertura("/home/runner/work/r/r/backend", "app/a.py")
    assert set(parse_report(raw).files) == {"app/a.py"}
    placed = parse_report(raw, roots=["/home/runner/work/r/r"])
    assert set(placed.files) == {"backend/app/a.py"}


def test_cobertura_filenames_under_a_package_source_keep_the_source_as_their_base() -> None:
    # coverage.py's source = ["toolz"]: the report alone cannot place them
    report = parse_report(cobertura("/ck/toolz", "__init__.py"))
    assert set(report.files) == {"__init__.py"}
    assert report.bases == {"__init__.py": ("/ck/toolz",)}


def test_without_a_file_list_the_one_base_below_the_checkout_places_a_path() -> None:
    assert place_under_checkout("__init__.py", ("/ck/toolz",), "/ck") == "toolz/__init__.py"
    assert place_under_checkout("a.py", ("/ck",), "/ck") == "a.py"
    assert place_under_checkout("a.py", ("/ck/x", "/ck/y"), "/ck") == "a.py"  # either
    assert place_under_checkout("a.py", ("/elsewhere/x",), "/ck") == "a.py"
    assert place_under_checkout("a.py", ("/ck/x",), "reports") == "a.py"  # not located
    assert place_under_checkout("a.py", (), "/ck") == "a.py"


def test_the_same_file_from_two_formats_and_two_ci_jobs_merges_into_one_entry() -> None:
    linux_job = cobertura("/home/runner/work/r/r", "src/pkg/a.py")
    windows_job = (
        b"SF:.\\src\\pkg\\a.py\nDA:1,0\nDA:2,3\nDA:3,1\nend_of_record\n"
        b"SF:D:\\a\\r\\r\\src\\pkg\\b.py\nDA:1,1\nend_of_record\n"
    )
    merged = Report()
    merged.merge(parse_report(linux_job))
    merged.merge(parse_report(windows_job, roots=["D:\\a\\r\\r"]))
    assert set(merged.files) == {"src/pkg/a.py", "src/pkg/b.py"}
    assert merged.files["src/pkg/a.py"].lines == {1: 1, 2: 3, 3: 1}


def test_go_import_paths_of_known_hosts_become_repository_relative() -> None:
    raw = (
        b"mode: set\n"
        b"github.com/o/r/pkg/a.go:1.1,2.2 1 1\n"
        b"gitlab.com/g/r/cmd/main.go:1.1,1.9 1 0\n"
        b"example.com/m/b.go:1.1,1.9 1 0\n"
    )
    assert set(parse_report(raw).files) == {"pkg/a.go", "cmd/main.go", "example.com/m/b.go"}


@pytest.mark.parametrize(
    ("import_path", "repo_path"),
    [
        ("github.com/cespare/xxhash/v2/xxhash.go", "xxhash.go"),
        ("github.com/o/r/v10/pkg/a.go", "pkg/a.go"),
        ("github.com/o/r/v1/a.go", "v1/a.go"),  # v1 is never a version suffix
        ("github.com/o/r/v2.go", "v2.go"),  # a file, not a suffix
        ("gitlab.com/group/sub/repo.git/pkg/a.go", "pkg/a.go"),
        ("gitlab.com/group/sub/repo.git/v3/a.go", "a.go"),
        ("example.org/deep/path/r.git/a.go", "a.go"),
        ("example.com/m/v2/b.go", "example.com/m/v2/b.go"),  # unknown host: kept
    ],
)
def test_go_module_paths_lose_their_major_version_suffix_and_vcs_qualified_root(
    import_path: str, repo_path: str
) -> None:
    raw = b"mode: set\n%s:1.1,2.2 1 1\n" % import_path.encode()
    assert set(parse_report(raw).files) == {repo_path}
