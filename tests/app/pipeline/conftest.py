from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.fake_github import GITHUB_SPEC, FakeGitHub, PrismProxy, prism_proxy


@pytest.fixture
def github(tmp_path: Path) -> Iterator[tuple[FakeGitHub, PrismProxy]]:
    """The fake GitHub behind Prism; a call its OpenAPI description refuses fails the test."""
    with FakeGitHub() as fake, prism_proxy(GITHUB_SPEC, fake.url, tmp_path / "prism.log") as p:
        yield fake, p
        assert p.violations() == []
