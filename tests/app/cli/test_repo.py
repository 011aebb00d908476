"""``covworker repo``: repositories and their upload tokens (on a SQLite file)."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from app.cli.main import main
from app.db.models import Repository
from app.db.repos import token_matches

pytestmark = pytest.mark.timeout(120)


def stored(url: str, name: str) -> Repository | None:
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        row = conn.execute(sa.select(Repository).where(Repository.name == name)).first()
    engine.dispose()
    return row  # type: ignore[return-value]


def last_line(capsys: pytest.CaptureFixture[str]) -> str:
    return capsys.readouterr().out.strip().splitlines()[-1]


def test_repo_add_prints_the_token_last_and_stores_only_its_hash(
    database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["repo", "add", "acme/web", "--service", "gitlab"]) == 0
    token = last_line(capsys)
    repo = stored(database, "acme/web")
    assert repo is not None and repo.service == "gitlab"
    assert token not in (repo.upload_token_hash or "")
    assert token_matches(token, repo.upload_token_hash)


def test_repo_add_refuses_a_repository_that_has_a_token(
    database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["repo", "add", "acme/web"]) == 0
    capsys.readouterr()
    assert main(["repo", "add", "acme/web"]) == 2
    assert "already has an upload token" in capsys.readouterr().err


def test_rotating_a_token_makes_the_old_one_stop_working(
    database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["repo", "add", "acme/web"]) == 0
    old = last_line(capsys)
    assert main(["repo", "token", "acme/web"]) == 2
    assert "--rotate" in capsys.readouterr().err
    assert main(["repo", "token", "acme/web", "--rotate"]) == 0
    new = last_line(capsys)
    repo = stored(database, "acme/web")
    assert repo is not None and new != old
    assert token_matches(new, repo.upload_token_hash)
    assert not token_matches(old, repo.upload_token_hash)


def test_repo_set_and_list_show_the_webhook(
    database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["repo", "add", "group/sub/proj"]) == 0
    assert main(["repo", "set", "group/sub/proj", "--webhook", "https://hooks.example/x"]) == 0
    secret = last_line(capsys)
    repo = stored(database, "group/sub/proj")
    assert repo is not None and repo.webhook_secret == secret and len(secret) >= 32
    assert main(["repo", "list"]) == 0
    listing = capsys.readouterr().out
    assert "group/sub/proj" in listing and "https://hooks.example/x" in listing
    with_credentials = "https://user:pw-secret@hooks.example/x"
    assert main(["repo", "set", "group/sub/proj", "--webhook", with_credentials]) == 0
    assert last_line(capsys) == secret  # the secret stays while the repository has a webhook
    assert main(["repo", "list"]) == 0
    assert "pw-secret" not in capsys.readouterr().out
    assert main(["repo", "set", "group/sub/proj", "--webhook", "ftp://x"]) == 2
    assert main(["repo", "set", "acme/none", "--webhook", "https://x"]) == 2


def test_repo_set_default_branch_names_it_and_an_empty_name_hands_it_back(
    database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["repo", "add", "acme/web"]) == 0
    assert main(["repo", "set", "acme/web", "--default-branch", "develop"]) == 0
    repo = stored(database, "acme/web")
    assert repo is not None and (repo.default_branch, repo.default_branch_source) == (
        "develop",
        "set",
    )
    assert main(["repo", "list"]) == 0
    assert "develop (set)" in capsys.readouterr().out
    assert main(["repo", "set", "acme/web", "--default-branch", "no such..branch"]) == 2
    assert main(["repo", "set", "acme/web", "--default-branch", ""]) == 0
    repo = stored(database, "acme/web")
    assert repo is not None and (repo.default_branch, repo.default_branch_source) == (None, None)
