"""A ``codecov.yml`` loaded at a cost bounded by its size.

YAML's anchors and aliases let a few hundred bytes name a value of
billions of nodes (each alias of a list of aliases doubles it): the loaded
value shares its parts, but anything that walks or prints it pays for the
whole. Nesting is recursion in the composer, so a deep file ends in
``RecursionError``. :func:`load` is PyYAML's safe loader with two bounds,
checked while the document is composed, before any Python value is built:

- the document, its aliases expanded, holds at most :data:`MAX_NODES`
  nodes (a file without aliases holds fewer than it has bytes, so
  :data:`MAX_NODES` is the size limit: no real file is refused by it);
- no node is nested deeper than :data:`MAX_DEPTH`.

Each node's expanded size is counted once, when it is composed, so the
check costs one step per node written in the file. Anything the loader
refuses, or any value PyYAML cannot build (``2020-13-45`` as a date, a
number of 5,000 digits), is :class:`YamlProblem` with a short message and
where it is: never the value itself.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.composer import Composer
from yaml.nodes import MappingNode, Node, SequenceNode

#: Most nodes a document may hold with its aliases expanded (the largest
#: file's bytes: ``MAX_YAML_BYTES`` in ``config.py``).
MAX_NODES = 256 * 1024
#: Deepest nesting of mappings and lists (a real codecov.yml nests ~6 deep).
MAX_DEPTH = 64


class YamlProblem(ValueError):
    """The file cannot be loaded: why, in a few words, and where."""


class _BoundedLoader(yaml.SafeLoader):
    def __init__(self, stream: str | bytes) -> None:
        super().__init__(stream)
        self._depth = 0
        self._sizes: dict[int, int] = {}  # id(node) -> nodes with its aliases expanded

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            node = Composer.compose_node(self, parent, index)
            if node is not None and id(node) not in self._sizes:
                raise YamlProblem(f"an alias refers to a value that holds it{_at(event)}")
            return node
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise YamlProblem(f"nested deeper than {MAX_DEPTH} levels{_at(self.peek_event())}")
        start = self.peek_event()
        try:
            node = Composer.compose_node(self, parent, index)
        finally:
            self._depth -= 1
        if node is not None:
            size = 1 + sum(self._sizes[id(child)] for child in _children(node))
            if size > MAX_NODES:
                raise YamlProblem(f"its aliases expand to more than {MAX_NODES} values{_at(start)}")
            self._sizes[id(node)] = size
        return node


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _at(event: Any) -> str:
    mark = getattr(event, "start_mark", None)
    return f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""


def load(text: str | bytes) -> Any:
    """The document's value; :class:`YamlProblem` if it is not valid YAML or
    breaks a bound."""
    loader = _BoundedLoader(text)
    try:
        return loader.get_single_data()
    except YamlProblem:
        raise
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" at line {where.line + 1}, column {where.column + 1}" if where else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise YamlProblem(f"not valid YAML{at}: {str(problem)[:200]}") from None
    except (ValueError, TypeError, OverflowError, RecursionError) as exc:
        # a value PyYAML reads but Python cannot hold (an impossible date, a
        # 5,000-digit number): its type, not its text
        raise YamlProblem(f"holds a value that cannot be read ({type(exc).__name__})") from None
    finally:
        loader.dispose()
