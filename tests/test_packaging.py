"""What ships: the wheel holds the product only, and every product module is used by the product."""

from __future__ import annotations

import ast
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.support.paths import ROOT

#: Modules that are entry points, not imported by other product modules.
ENTRY_POINTS = {
    "app.actors",  # dramatiq app.actors
    "app.cli.main",  # the covworker console script
    "app.migrations.env",  # run by Alembic
}

#: What only tests and benchmarks may contain; none of it in the wheel.
SCAFFOLDING_NAMES = ("bench", "synthetic", "emit", "faults", "fault_points", "tests/")
#: Where test scaffolding lives (fault points, writers, synthetic reports):
#: no module of the wheel may import from them, so none of it can run in production.
SCAFFOLDING_PACKAGES = ("tests", "benchmarks")


@pytest.mark.slow  # builds the wheel in a subprocess
@pytest.mark.timeout(600)
def test_the_wheel_contains_no_benchmark_fault_injection_or_synthetic_data_code(
    tmp_path: Path,
) -> None:
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(tmp_path), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=540,
    )
    (wheel,) = tmp_path.glob("covworker-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        sources = {n: archive.read(n).decode() for n in names if n.endswith(".py")}
    packages = {name.split("/")[0] for name in names if "/" in name}
    assert packages - {n for n in packages if n.endswith(".dist-info")} == {"app", "middleware"}
    assert not [n for n in names if any(part in n for part in SCAFFOLDING_NAMES)]
    assert not {n: found for n, t in sources.items() if (found := scaffolding_imports(t))}
    # And what the product needs is there: the Lua scripts and the migrations.
    assert {
        "middleware/gate/backends/acquire.lua",
        "app/lua/finisher_entry.lua",
        "app/lua/owner_epoch_claim.lua",
        "app/lua/provider_budget.lua",
        "app/migrations/versions/0001_initial_schema.py",
    } <= set(names)


def scaffolding_imports(source: str) -> set[str]:
    """The modules of tests/ or benchmarks/ that ``source`` imports, anywhere in it."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = [node.module]
        found.update(n for n in names if n.split(".")[0] in SCAFFOLDING_PACKAGES)
    return found


def product_modules() -> dict[str, Path]:
    modules = {}
    for package in ("app", "middleware"):
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if parts[-1] == "__init__":
                continue
            modules[".".join(parts)] = path
    return modules


def imported_names(path: Path) -> set[str]:
    """Modules a file imports, or names as ``"module:attribute"`` for a
    library to import (uvicorn's ``http=``, an app factory)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            module, colon, attribute = node.value.partition(":")
            if colon and module.startswith(("app.", "middleware.")) and attribute.isidentifier():
                names.add(module)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_every_product_module_is_used_by_the_product() -> None:
    modules = product_modules()
    imported: set[str] = set()
    for path in modules.values():
        imported |= imported_names(path)
    for init in [*(ROOT / "app").rglob("__init__.py"), *(ROOT / "middleware").rglob("__init__.py")]:
        imported |= imported_names(init)
    unused = {
        name
        for name in modules
        if name not in imported
        and name not in ENTRY_POINTS
        and not name.startswith("app.migrations.versions.")
    }
    assert unused == set(), "modules only tests or benchmarks import belong outside app/"


def test_the_deployment_constraints_pin_every_runtime_dependency_within_its_bounds() -> None:
    """constraints.txt (what the Dockerfile installs with) pins each package
    pyproject.toml depends on, at a version its specifier accepts."""
    import tomllib

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    root = ROOT
    pins = {}
    for line in (root / "constraints.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, pinned = line.partition("==")
            pins[canonicalize_name(name)] = pinned.strip()
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    for spec in project["dependencies"]:
        requirement = Requirement(spec)
        if requirement.marker is not None and not requirement.marker.evaluate():
            continue
        pinned = pins.get(canonicalize_name(requirement.name))
        assert pinned, f"{requirement.name} is not pinned in constraints.txt"
        assert requirement.specifier.contains(pinned), (requirement, pinned)
    assert "-c constraints.txt" in (root / "Dockerfile").read_text()
