"""A test whose thread raises must fail, whatever the test asserts after it."""

from __future__ import annotations

import tomllib

import pytest

from tests.support.paths import ROOT

pytest_plugins = ["pytester"]

PYPROJECT = ROOT / "pyproject.toml"

THREAD_TEST = """
import threading


def test_a_thread_that_raises() -> None:
    def crash() -> None:
        raise RuntimeError("the thread crashed")

    thread = threading.Thread(target=crash)
    thread.start()
    thread.join()
"""


def test_a_test_whose_thread_raises_fails_under_the_project_config(
    pytester: pytest.Pytester,
) -> None:
    options = tomllib.loads(PYPROJECT.read_text())["tool"]["pytest"]["ini_options"]
    lines = "\n".join(f"    {value}" for value in options["filterwarnings"])
    pytester.makeini(f"[pytest]\nfilterwarnings =\n{lines}\n")
    pytester.makepyfile(test_thread=THREAD_TEST)

    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")

    result.assert_outcomes(failed=1)
