"""How the CLI names commits and repositories: SHA prefixes, case, unknown commits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.cli.main import main
from tests.app.cli.conftest import SHA, lcov, write

pytestmark = [pytest.mark.timeout(120), pytest.mark.integration]

REPORT = lcov({"a.py": {1: 1, 2: 0}})


def test_a_unique_sha_prefix_finds_a_commit_uploaded_with_its_full_sha(
    services_env: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = write(tmp_path, {"a.info": REPORT})
    assert main(["upload", "--create", "--repo", "acme/web", "--commit", SHA, *files]) == 0
    capsys.readouterr()
    assert main(["status", "--repo", "acme/web", "--commit", "71c5d36", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["commit"] == SHA


def test_an_ambiguous_prefix_is_an_error_listing_the_candidates(
    services_env: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = write(tmp_path, {"a.info": REPORT})
    other = "71c5d36" + "1" * 33
    for sha in (SHA, other):
        assert main(["upload", "--create", "--repo", "acme/web", "--commit", sha, *files]) == 0
    capsys.readouterr()
    assert main(["report", "--repo", "acme/web", "--commit", "71c5d36"]) == 2
    err = capsys.readouterr().err
    assert "ambiguous" in err and SHA in err and other in err


def test_repository_names_are_compared_without_case(
    services_env: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = write(tmp_path, {"a.info": REPORT})
    assert main(["upload", "--create", "--repo", "Me/Proj", "--commit", SHA, *files]) == 0
    assert main(["upload", "--create", "--repo", "me/proj", "--commit", SHA, *files]) == 0
    capsys.readouterr()
    assert main(["status", "--repo", "ME/PROJ", "--commit", SHA, "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["repository"] == "me/proj" and status["uploads"]["uploaded"] == 2


def test_status_of_an_unknown_commit_says_so_and_exits_one(
    services_env: object, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["status", "--repo", "acme/web", "--commit", "deadbeef"]) == 1
    assert "commit deadbeef of acme/web is unknown" in capsys.readouterr().err
    assert main(["report", "--repo", "acme/web", "--commit", "deadbeef"]) == 1


def test_commits_lists_a_repositorys_commits_and_refuses_an_unknown_one(
    services_env: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = write(tmp_path, {"a.info": REPORT})
    for sha in (SHA, "b" * 64):
        assert main(["upload", "--create", "--repo", "acme/web", "--commit", sha, *files]) == 0
    capsys.readouterr()
    assert main(["commits", "Acme/Web", "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert {c["commit"] for c in listing["commits"]} == {SHA, "b" * 64}
    assert all(c["uploads"]["uploaded"] == 1 for c in listing["commits"])
    assert main(["commits", "acme/nothing"]) == 1
    assert "repository acme/nothing is unknown" in capsys.readouterr().err
