"""``covworker repo set --yaml``: a repository's stored codecov.yml (on a SQLite file)."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from app.cli.main import main
from app.db.models import Repository
from app.merge.carryforward import commit_config

pytestmark = pytest.mark.timeout(120)


def stored_yaml(url: str, name: str) -> str | None:
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        text = conn.scalar(sa.select(Repository.codecov_yaml).where(Repository.name == name))
    engine.dispose()
    return text


def added_with_yaml(tmp_path: Path, text: str) -> Path:
    """acme/web added, and a codecov.yml of ``text`` to set on it."""
    assert main(["repo", "add", "acme/web"]) == 0
    path = tmp_path / "codecov.yml"
    path.write_text(text)
    return path


def test_a_valid_yaml_is_stored_and_read_back_as_the_repositorys_config(
    database: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = added_with_yaml(tmp_path, "flags:\n  unit:\n    carryforward: true\n")
    assert main(["repo", "set", "acme/web", "--yaml", str(path)]) == 0
    assert "acme/web: codecov.yml stored" in capsys.readouterr().out
    assert stored_yaml(database, "acme/web") == path.read_text()
    engine = sa.create_engine(database)
    with sa.orm.Session(engine) as session:
        repo_id = session.scalar(sa.select(Repository.id).where(Repository.name == "acme/web"))
        assert repo_id is not None
        assert commit_config(session, repo_id, None).is_carryforward("unit")
    engine.dispose()
    # the webhook is left alone; '' removes the YAML
    assert main(["repo", "set", "acme/web", "--yaml", ""]) == 0
    assert stored_yaml(database, "acme/web") is None


def test_an_invalid_yaml_is_refused_with_each_key_and_nothing_is_stored(
    database: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = added_with_yaml(tmp_path, "coverage:\n  precision: 12\ncomment:\n  behavior: loud\n")
    capsys.readouterr()
    assert main(["repo", "set", "acme/web", "--yaml", str(path)]) == 2
    err = capsys.readouterr().err
    assert "coverage.precision: must be between 0 and 5, not 12" in err
    assert "comment.behavior: must be one of default, once, new, spammy, not 'loud'" in err
    assert stored_yaml(database, "acme/web") is None
    assert main(["repo", "set", "acme/web", "--yaml", str(tmp_path / "missing.yml")]) == 2
    assert main(["repo", "set", "acme/web"]) == 2
