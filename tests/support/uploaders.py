"""Codecov's real uploaders against a real ``covworker serve``: a checkout
holding the fixture programs and their reports, and ``codecovcli`` run in it
with none of the CI's own variables."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from tests.support.paths import FIXTURES

PY, C = FIXTURES / "reports" / "coveragepy", FIXTURES / "reports" / "c"
#: The CI jobs of one commit: (name, flags, report files), each uploaded by codecov-cli.
CLI_JOBS = [
    ("sum", ["unit"], ["run-sum.xml"], "upload-coverage"),
    ("divide", ["unit"], ["run-divide.xml"], "upload-process"),
    ("classify", ["integration"], ["run-classify.json"], "upload-coverage"),
]
LEGACY_FILES = ["run-sum.info", "run-divide.info"]  # C, absolute paths; the legacy uploader


def uploader_env(base: dict[str, str]) -> dict[str, str]:
    """The environment without any CI's or Codecov's variables (the test says it all)."""
    drop = ("CODECOV_", "GITHUB_", "CI", "CIRCLE", "GITLAB_", "TRAVIS", "BUILDKITE", "JENKINS")
    return {k: v for k, v in base.items() if not k.startswith(drop)}


def make_checkout(tmp: Path) -> tuple[Path, str]:
    """A git repository with the sources the fixture reports cover, and its HEAD."""
    repo = tmp / "checkout"
    shutil.copytree(FIXTURES / "programs" / "python" / "calc", repo / "calc")
    (repo / "c").mkdir()
    shutil.copy(FIXTURES / "programs" / "c" / "calc.c", repo / "c" / "calc.c")
    reports = repo / "reports"
    reports.mkdir()
    for _, _, files, _ in CLI_JOBS:
        for name in files:
            shutil.copy(PY / name, reports / name)
    for name in LEGACY_FILES:
        shutil.copy(C / name, reports / f"c-{name}")
    return repo, first_commit(repo, ["calc", "c"], "sources")


def first_commit(repo: Path, paths: list[str], message: str) -> str:
    """``git init`` in ``repo`` and a first commit of ``paths`` (files or folders
    already there); the commit's SHA."""
    git = ["git", "-c", "user.email=ci@example.com", "-c", "user.name=ci"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "add", *paths], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", message], cwd=repo, check=True)
    return subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=repo, check=True, capture_output=True, text=True
    ).stdout.strip()


def uploader(name: str) -> str:
    """The path of an installed uploader (``codecovcli``, ``codecov``): the one
    beside this interpreter first, so the tests find the virtualenv's copy
    even when its ``bin`` is not on ``PATH``."""
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.exists() else shutil.which(name) or name


def codecovcli(
    env: dict[str, str], cwd: Path, base_url: str, command: str, *args: str
) -> subprocess.CompletedProcess[str]:
    cli = [uploader("codecovcli")]
    return subprocess.run(
        [*cli, "-u", base_url, command, "--git-service", "github", "--plugin", "noop",
         "--disable-search", "-Z", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
