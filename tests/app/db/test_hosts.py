"""The git hosts covworker knows: the names the uploaders send."""

from __future__ import annotations

import ast
from pathlib import Path

from codecov_cli.helpers.git import GitService

import app.db.hosts
from app.db.hosts import SERVICES


def test_the_uploaders_git_services_are_known_each_once() -> None:
    # The choices of codecov-cli's --git-service, from the uploader itself.
    assert set(SERVICES) == {service.value for service in GitService}
    assert len(SERVICES) == len(set(SERVICES))


def test_the_module_imports_nothing_so_the_command_line_parser_stays_light() -> None:
    tree = ast.parse(Path(app.db.hosts.__file__).read_text())
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)]
