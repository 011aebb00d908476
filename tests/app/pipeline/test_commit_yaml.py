"""``commit_yaml``: a commit's ``codecov.yml`` in Codecov's lookup order, read
once per commit through the provider and cached."""

from __future__ import annotations

from pathlib import Path

from app.db.models import Repository
from app.pipeline.commit_yaml import load_yaml, lookups
from app.providers import ContentTooLarge
from app.pullrequests.config import MAX_YAML_BYTES, OVERSIZED_YAML, parse_codecov_yaml
from tests.support.pipeline import unit_services

SHA = "a" * 40


class Files:
    """A provider that serves some files at one commit and counts the reads."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = files
        self.reads: list[str] = []

    def file_contents(
        self, repo: str, path: str, ref: str, *, max_bytes: int | None = None
    ) -> bytes | None:
        self.reads.append(path)
        found = self.files.get(path) if ref == SHA else None
        if found is not None and max_bytes is not None and len(found) > max_bytes:
            raise ContentTooLarge(f"{path} answered more than {max_bytes} bytes", max_bytes)
        return found


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


def test_a_file_over_the_limit_is_refused_and_only_its_refusal_is_cached(tmp_path: Path) -> None:
    services = unit_services(tmp_path)
    try:
        repo = Repository(id=1, name="acme/web")
        big = b"# " + b"x" * (20 * 1024 * 1024) + b"\n"
        provider = Files({"codecov.yml": big, ".github/codecov.yml": b"a: 1\n"})
        text = load_yaml(services, provider, repo, SHA, lookups())  # type: ignore[arg-type]
        assert text == OVERSIZED_YAML  # the first in Codecov's order, refused: no fallback
        (error,) = parse_codecov_yaml(text).errors
        assert str(error) == f"(file): larger than {MAX_YAML_BYTES} bytes"
        cached = services.redis.get(f"{services.settings.namespace}:prfeedback:yaml:1:{SHA}")
        assert cached == OVERSIZED_YAML.encode() and len(cached) < 100
        assert load_yaml(services, provider, repo, SHA, lookups()) == OVERSIZED_YAML  # type: ignore[arg-type]
        assert len(provider.reads) == 12
    finally:
        services.close()
