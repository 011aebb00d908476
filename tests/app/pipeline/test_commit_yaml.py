"""``commit_yaml``: a commit's ``codecov.yml`` in Codecov's lookup order, read
once per commit through the provider and cached."""

from __future__ import annotations

from pathlib import Path

from app.db.models import Repository
from app.pipeline.commit_yaml import load_yaml, lookups
from tests.support.pipeline import unit_services

SHA = "a" * 40


class Files:
    """A provider that serves some files at one commit and counts the reads."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = files
        self.reads: list[str] = []

    def file_contents(self, repo: str, path: str, ref: str) -> bytes | None:
        self.reads.append(path)
        return self.files.get(path) if ref == SHA else None


def test_the_first_file_in_codecovs_order_wins_and_is_read_once_per_commit(
    tmp_path: Path,
) -> None:
    services = unit_services(tmp_path)
    try:
        repo = Repository(id=1, name="acme/web")
        provider = Files({".github/codecov.yml": b"b: 2\n", "codecov.yaml": b"a: 1\n"})
        assert load_yaml(services, provider, repo, SHA, lookups()) == "a: 1\n"  # type: ignore[arg-type]
        first = len(provider.reads)
        assert first == 12  # every place asked at once
        assert load_yaml(services, provider, repo, SHA, lookups()) == "a: 1\n"  # type: ignore[arg-type]
        assert len(provider.reads) == first  # cached
    finally:
        services.close()


def test_a_commit_without_the_file_is_remembered_as_having_none(tmp_path: Path) -> None:
    services = unit_services(tmp_path)
    try:
        repo = Repository(id=1, name="acme/web")
        provider = Files({})
        assert load_yaml(services, provider, repo, SHA, lookups()) is None  # type: ignore[arg-type]
        assert load_yaml(services, provider, repo, SHA, lookups()) is None  # type: ignore[arg-type]
        assert len(provider.reads) == 12
    finally:
        services.close()
