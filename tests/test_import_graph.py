"""The import graph of app/ and middleware/ runs one way.

Read with ``ast`` from the source (nothing is imported): every ``import``
and ``from ... import`` counts, at module level and inside functions alike
(an import inside a function that closes a loop is still a loop). A
``from package import name`` counts as an import of ``package.name`` when
that is a module of the tree, else of ``package``.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

from tests.support.paths import ROOT

PACKAGES = ("app", "middleware")
MIDDLEWARE_MOST_LINES = 450


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" not in path.parts:
                found[module_name(path)] = path
    return found


def imported_names(source: str, package: str) -> set[str]:
    """Every module name ``source`` (a module of ``package``) imports: import
    statements anywhere in it, relative ones resolved, and
    ``importlib.import_module("...")`` / ``__import__("...")`` of a literal."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", None))
            in ("import_module", "__import__")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            names.add(node.args[0].value)
    return names


@functools.cache
def imports_of(path: Path) -> frozenset[str]:
    """What the module at ``path`` imports, parsed once for the tests here."""
    own = module_name(path)
    package = own if path.name == "__init__.py" else own.rpartition(".")[0]
    return frozenset(imported_names(path.read_text(), package))


def import_graph() -> dict[str, set[str]]:
    """Module -> the modules of the tree it imports (a package's ``__init__``
    stands for the package)."""
    known = modules()
    return {
        name: {target for target in imports_of(path) if target in known and target != name}
        for name, path in known.items()
    }


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def without_package_faces(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """Drop the edges from a package to its own modules: a package's
    ``__init__`` that hands on its modules' names is its face, not a loop
    with the modules that import a sibling through it."""
    return {name: {t for t in to if not t.startswith(f"{name}.")} for name, to in graph.items()}


def test_the_import_graph_of_app_and_middleware_has_no_circle() -> None:
    assert circles(without_package_faces(import_graph())) == []


def test_the_circle_finder_finds_a_circle_however_the_import_is_written() -> None:
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    source = (
        "import importlib\n"
        "def f():\n"
        "    from app.coverage import codec\n"
        "    from . import sibling\n"
        "    return importlib.import_module('app.actors')\n"
    )
    assert {"app.coverage.codec", "app.web.sibling", "app.actors"} <= imported_names(
        source, "app.web"
    )


def test_no_app_module_imports_benchmarks() -> None:
    offenders = {
        name
        for name, path in modules().items()
        if name.startswith("app")
        and any(t == "benchmarks" or t.startswith("benchmarks.") for t in imports_of(path))
    }
    assert offenders == set()


#: The HTTP layer (docs/architecture.md, "Layers"): the pages and the API, the
#: test-results routes among them. Only it and the entry points above it may import it.
HTTP_LAYER = ("app.web", "app.api")
#: The entry points, above the HTTP layer (the CLI serves it).
ENTRY_POINTS = ("app.cli", "app.embedded")


def within(name: str, packages: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(f"{p}.") for p in packages)


def http_layer_importers(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """Modules below the HTTP layer and what they import of it."""
    return {
        name: found
        for name, to in graph.items()
        if not within(name, HTTP_LAYER + ENTRY_POINTS)
        and (found := {t for t in to if within(t, HTTP_LAYER)})
    }


def test_nothing_below_the_http_layer_imports_the_pages_or_the_api() -> None:
    assert http_layer_importers(import_graph()) == {}


def test_the_layer_check_finds_a_pipeline_module_importing_the_pages() -> None:
    graph = {
        "app.notify.notifier": {"app.web.delta", "app.queries"},
        "app.web.router": {"app.queries"},
        "app.web.tests": {"app.web.access", "app.testresults.summary"},
        "app.testresults.store": {"app.api.test_results"},
        "app.cli.repo": {"app.web.access"},
        "app.queries": {"app.api.errors"},
    }
    assert http_layer_importers(graph) == {
        "app.notify.notifier": {"app.web.delta"},
        "app.testresults.store": {"app.api.test_results"},
        "app.queries": {"app.api.errors"},
    }


def test_no_module_under_middleware_is_over_450_lines() -> None:
    long = {
        str(path.relative_to(ROOT)): n
        for path in (ROOT / "middleware").rglob("*.py")
        if (n := len(path.read_text().splitlines())) > MIDDLEWARE_MOST_LINES
    }
    assert long == {}


#: Packages of pure logic (docs/architecture.md, "Layers"): no database, Redis,
#: provider or network I/O; the pipeline reads and writes for them.
PURE = ("app.coverage", "app.pullrequests")
#: What a pure module may not import.
IO_MODULES = (
    "sqlalchemy",
    "redis",
    "httpx",
    "app.db",
    "app.runtime.services",
    "app.providers",
    "app.runtime.state",
)


def io_importers(graph_of: dict[str, frozenset[str]]) -> dict[str, set[str]]:
    """Modules of the pure packages and the I/O modules they import."""
    return {
        name: found
        for name, to in graph_of.items()
        if within(name, PURE) and (found := {t for t in to if within(t, IO_MODULES)})
    }


def test_the_pure_packages_import_no_database_redis_or_provider() -> None:
    imports = {name: imports_of(path) for name, path in modules().items()}
    assert io_importers(imports) == {}


def test_the_purity_check_finds_a_pure_module_reading_the_database() -> None:
    imports = {
        "app.pullrequests.carryforward": frozenset({"sqlalchemy.orm", "app.coverage"}),
        "app.merge.carryforward": frozenset({"sqlalchemy", "app.db.models"}),
    }
    assert io_importers(imports) == {"app.pullrequests.carryforward": {"sqlalchemy.orm"}}


#: The pipeline's stages (docs/architecture.md, "Layers"): what the actors run.
STAGES = ("app.pipeline", "app.ingest", "app.merge", "app.notify", "app.feedback", "app.recovery")


def runtime_stage_importers(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """Modules of ``app/runtime/`` and the stage modules or entry points they import."""
    return {
        name: found
        for name, to in graph.items()
        if within(name, ("app.runtime",))
        and (
            found := {
                t for t in to if within(t, STAGES + HTTP_LAYER + ENTRY_POINTS + ("app.actors",))
            }
        )
    }


def test_the_runtime_imports_no_stage() -> None:
    # app/runtime/ is the worker's assembly (broker, services, Redis keys, the
    # process's parse budget and kept report): the stages stand on it.
    assert runtime_stage_importers(import_graph()) == {}


def test_the_runtime_check_finds_the_worker_importing_the_actors() -> None:
    graph = {
        "app.runtime.worker": {"app.actors", "app.runtime.state"},
        "app.runtime.state": {"app.settings"},
        "app.pipeline.finisher": {"app.runtime.state"},
    }
    assert runtime_stage_importers(graph) == {"app.runtime.worker": {"app.actors"}}
