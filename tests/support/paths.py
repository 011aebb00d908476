"""Where the checkout's folders are, found once from this file.

Tests name these instead of counting ``Path(__file__).parents[N]``, which
changes whenever a test moves to a deeper folder.
"""

from __future__ import annotations

from pathlib import Path

#: The checkout: the folder holding ``pyproject.toml``, ``app/`` and ``tests/``.
ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
#: Committed inputs: real tools' reports, uploader payloads, JUnit files.
FIXTURES = TESTS / "fixtures"
#: Coverage reports written by real tools (``tests/fixtures/regenerate.sh``).
REPORTS = FIXTURES / "reports"
#: JUnit XML written by real test runners (``tests/fixtures/junit/SOURCES.md``).
JUNIT = FIXTURES / "junit"
#: The folder shared beside the clone (``../shared``: the public coverage corpus).
SHARED = ROOT.parent / "shared"
