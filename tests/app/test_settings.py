"""Every setting is documented: docs/configuration.md is generated from the
settings model and kept fresh."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _script():
    spec = importlib.util.spec_from_file_location(
        "config_reference", ROOT / "scripts" / "config_reference.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_the_configuration_page_is_what_the_settings_model_generates() -> None:
    script = _script()
    assert (ROOT / "docs" / "configuration.md").read_text() == script.page(), (
        "docs/configuration.md is stale: run python scripts/config_reference.py"
    )


def test_every_setting_has_a_row_with_its_variable_and_default() -> None:
    from app.settings import Settings, env_name

    page = (ROOT / "docs" / "configuration.md").read_text()
    for name in Settings.model_fields:
        assert f"| `{env_name(name)}` |" in page, name
    assert "| `COVWORKER_FINISHER_CONCURRENCY` | 3 |" in page


def test_a_setting_without_a_comment_stops_the_generator(tmp_path, monkeypatch) -> None:
    script = _script()
    source = script.SETTINGS.read_text().replace(
        "    #: Finishers running at once per commit.\n", ""
    )
    assert source != script.SETTINGS.read_text()
    copy = tmp_path / "settings.py"
    copy.write_text(source)
    monkeypatch.setattr(script, "SETTINGS", copy)
    try:
        script.rows()
    except SystemExit as stop:
        assert "finisher_concurrency has no #: comment" in str(stop)
    else:
        raise AssertionError("a setting without a comment was accepted")
