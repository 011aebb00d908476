"""The layout of ``tests/`` stays findable: it mirrors the code, helpers live
in ``tests/support``, and tests never import ``benchmarks/``.

A newcomer finds the test of ``app/x/y.py`` under ``tests/app/x/`` and of
``middleware/z.py`` under ``tests/middleware/``. Benchmarks may use the test
helpers (``tests/support``: writers, synthetic reports, processes), never the
other way round, so a test never depends on benchmark code; only
``tests/bench`` imports ``benchmarks``, as the tests of the benchmarks.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support.paths import FIXTURES, ROOT, TESTS

#: Folders whose tests are not about one module (whole-system scenarios).
SCENARIO_DIRS = frozenset({"e2e", "faults", "scale", "bench", "browser", "deploy"})


def modules_under_tests() -> list[Path]:
    return sorted(p for p in TESTS.rglob("*.py") if not p.is_relative_to(FIXTURES))


def imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
    return found


def test_no_test_or_test_helper_imports_benchmarks() -> None:
    offenders = {
        str(path.relative_to(ROOT))
        for path in modules_under_tests()
        if not path.is_relative_to(TESTS / "bench")
        and any(name == "benchmarks" or name.startswith("benchmarks.") for name in imports(path))
    }
    assert offenders == set()


def test_helper_modules_live_in_tests_support_only() -> None:
    helpers = {
        str(path.relative_to(ROOT))
        for path in modules_under_tests()
        if not path.name.startswith("test_")
        and path.name not in ("conftest.py", "__init__.py")
        and not path.is_relative_to(TESTS / "support")
    }
    assert helpers == set()


def test_the_folders_of_tests_app_and_tests_middleware_mirror_packages_of_the_code() -> None:
    top = {path.name for path in TESTS.iterdir() if path.is_dir() and path.name != "__pycache__"}
    assert top <= {"app", "middleware", "support", "fixtures"} | SCENARIO_DIRS
    unmatched = {
        str(folder.relative_to(ROOT))
        for base in ("app", "middleware")
        for folder in (TESTS / base).rglob("*")
        if folder.is_dir()
        and folder.name != "__pycache__"
        and not (ROOT / folder.relative_to(TESTS) / "__init__.py").is_file()
    }
    assert unmatched == set()


def expected_test_file(module: Path) -> str:
    """``test_y.py`` for ``y.py`` and for a private ``_y.py`` alike."""
    return f"test_{module.name.lstrip('_')}"


def test_every_module_of_app_and_middleware_has_a_test_file_named_after_it() -> None:
    # The test of app/x/y.py is tests/app/x/test_y.py: a newcomer looks there
    # first. Package __init__ modules and migrations are read by their users.
    untested = {
        str(module.relative_to(ROOT))
        for base in ("app", "middleware")
        for module in (ROOT / base).rglob("*.py")
        if module.name != "__init__.py"
        and "migrations" not in module.relative_to(ROOT).parts
        and not (TESTS / module.relative_to(ROOT).parent / expected_test_file(module)).is_file()
    }
    assert untested == set()
