"""codecov.yml is loaded at a cost its size bounds: an alias bomb, deep
nesting or a value Python cannot hold is one short error, never the value."""

from __future__ import annotations

import resource
import time

import pytest

from app.pullrequests.config import parse_codecov_yaml
from app.pullrequests.yamlfile import MAX_DEPTH, MAX_NODES, YamlProblem, load


def alias_bomb(levels: int = 9, width: int = 9) -> str:
    """``levels`` lists of ``width`` aliases of the one before: width**levels
    values from a few hundred bytes."""
    lines = ["l0: &l0 [" + ",".join(["x"] * width) + "]"]
    for i in range(1, levels):
        lines.append(f"l{i}: &l{i} [" + ",".join([f"*l{i - 1}"] * width) + "]")
    return "\n".join(lines) + f"\nfixes: [*l{levels - 1}]\nignore: *l{levels - 1}\n"


def test_an_alias_bomb_is_refused_while_composed_with_a_short_error() -> None:
    text = alias_bomb()
    assert len(text) < 500  # 9**9 = 387 million values once expanded
    before = time.process_time()
    config = parse_codecov_yaml(text)
    assert time.process_time() - before < 0.5
    (error,) = config.errors
    assert error.key == "(file)"
    assert error.message.startswith(f"its aliases expand to more than {MAX_NODES} values at line")
    assert len(str(error)) < 120


def test_an_alias_bomb_costs_no_memory_to_refuse() -> None:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for _ in range(20):
        parse_codecov_yaml(alias_bomb(levels=12))
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak < 16 * 1024  # KiB


def test_aliases_that_stay_small_load_as_yaml_says() -> None:
    text = "base: &base {target: 80%}\ncoverage:\n  status:\n    project:\n      a: *base\n"
    assert load(text)["coverage"]["status"]["project"]["a"] == {"target": "80%"}
    assert parse_codecov_yaml(text).errors == ()


def test_an_alias_to_the_value_holding_it_is_refused() -> None:
    with pytest.raises(YamlProblem, match="an alias refers to a value that holds it"):
        load("a: &a [1, *a]\n")


@pytest.mark.parametrize(
    "text",
    ["[" * 3000 + "]" * 3000, "{a: " * 3000 + "1" + "}" * 3000, "- " * 2000 + "x\n"],
    ids=["flow-lists", "flow-mappings", "block-lists"],
)
def test_nesting_past_the_bound_is_a_config_error_not_a_recursion_error(text: str) -> None:
    (error,) = parse_codecov_yaml(text).errors
    assert error.key == "(file)"
    assert error.message.startswith(f"nested deeper than {MAX_DEPTH} levels at line 1")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("when: 2020-13-45\n", "holds a value that cannot be read (ValueError)"),
        ("n: " + "9" * 5000 + "\n", "holds a value that cannot be read (ValueError)"),
        ("a: !!python/object:os.system x\n", "not valid YAML"),
        ("a: [1, 2\n", "not valid YAML at line 2"),
    ],
)
def test_every_other_unreadable_file_is_one_short_config_error(text: str, problem: str) -> None:
    (error,) = parse_codecov_yaml(text).errors
    assert error.key == "(file)" and error.message.startswith(problem)
    assert len(error.message) < 300


def test_a_value_quoted_in_an_error_is_cut_to_a_few_items() -> None:
    text = "big: &big [" + ",".join(["abcdefghij" * 10] * 1000) + "]\nfixes: [*big]\n"
    (error,) = parse_codecov_yaml(text).errors
    assert error.key == "fixes[0]" and error.message.startswith('must be "before::after", not [')
    assert len(error.message) < 250


def test_a_huge_key_is_cut_in_its_error() -> None:
    (error,) = parse_codecov_yaml("flags:\n  ? " + "f" * 100_000 + "\n  : 1\n").errors
    assert error.key.startswith("flags.fff") and len(error.key) <= 200
