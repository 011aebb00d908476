"""Codecov's path patterns: prefixes, globs, regexes, negation; linear time."""

from __future__ import annotations

from app.pullrequests.config import parse_codecov_yaml, path_matches


def test_path_patterns_are_prefixes_globs_or_regexes_and_can_be_negated() -> None:
    assert path_matches(("src/",), "src/a/b.py") and path_matches(("src",), "src/a.py")
    assert not path_matches(("src",), "srcs/a.py")
    assert path_matches(("**/*.py",), "a/b/c.py") and path_matches(("**/*.py",), "c.py")
    assert not path_matches(("src/*.py",), "src/a/b.py")
    assert path_matches(("^lib/.*\\.c$",), "lib/x/y.c")
    assert path_matches(("src/", "!src/gen/"), "src/a.py")
    assert not path_matches(("src/", "!src/gen/"), "src/gen/a.py")
    assert path_matches(("!docs/",), "src/a.py")


def test_a_catastrophic_pattern_matches_in_linear_time() -> None:
    import time

    config = parse_codecov_yaml("ignore: ['^(a+)+$', '^(a|a)*b$']\n")
    assert config.errors == () and len(config.ignore) == 2
    before = time.process_time()
    for n in (30, 1000, 100_000):
        assert not config.is_ignored("a" * n + "c")
    assert time.process_time() - before < 0.5  # backtracking: 2**30 steps for n = 30
