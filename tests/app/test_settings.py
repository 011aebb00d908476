"""Every setting is documented in the README's configuration table."""

from __future__ import annotations

import re

from app.settings import Settings, env_name
from tests.support.paths import ROOT

README = ROOT / "README.md"


def documented() -> set[str]:
    table = README.read_text().split("## Configuration", 1)[1].split("\n## ", 1)[0]
    names = set()
    for row in table.splitlines():
        if row.startswith("| `"):
            names.update(re.findall(r"`([A-Za-z0-9_]+)`", row.split("|")[1]))
    return names


def test_the_readme_table_lists_every_setting_by_its_variable() -> None:
    variables = {env_name(field) for field in Settings.model_fields}
    assert variables - documented() == set()
