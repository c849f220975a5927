"""Every third-party package the shipped code imports is declared: by the core dependencies or by
an extra. The development environment holds every package at once (trio brings sniffio, for one),
so an undeclared import passes every other test and fails only on a user's clean install."""

from __future__ import annotations

import ast
import re
import sys
from importlib.metadata import PackageNotFoundError, packages_distributions, requires
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[2]
SHIPPED = ("runtime", "codegen", "generated")


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9._-]+", requirement.strip())
    assert match, requirement
    return normalise(match.group(0))


def declared() -> set[str]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    names = {requirement_name(r) for r in project["dependencies"]}
    for extra, requirements in project["optional-dependencies"].items():
        if extra != "dev":  # the development extra is not something a user installs
            names |= {requirement_name(r) for r in requirements}
    return names


def with_their_dependencies(names: set[str]) -> set[str]:
    """`names` and everything they require, as installed here (markers and extras included: what
    a declared package may bring on some platform or Python counts as brought by it)."""
    closure, todo = set(names), list(names)
    while todo:
        try:
            found = requires(todo.pop()) or []
        except PackageNotFoundError:
            continue
        for requirement in found:
            name = requirement_name(requirement)
            if name not in closure:
                closure.add(name)
                todo.append(name)
    return closure


def imported_top_levels() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for folder in SHIPPED:
        for path in sorted((REPO / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(), str(path))
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    found.setdefault(name.split(".")[0], []).append(f"{path.relative_to(REPO)}:{node.lineno}")
    return found


def test_every_imported_distribution_is_declared() -> None:
    distributions = packages_distributions()
    ours = {"mcpgen", "generated"}
    allowed = with_their_dependencies(declared())
    undeclared: dict[str, list[str]] = {}
    for module, where in imported_top_levels().items():
        if module in ours or module in sys.stdlib_module_names or module == "__future__":
            continue
        # A module not installed here (tomli on Python 3.11) must be declared under its own name.
        dists = {normalise(d) for d in distributions.get(module, [])} or {normalise(module)}
        if not dists & allowed:
            undeclared[module] = where
    assert not undeclared, f"imported but declared by no dependency or extra: {undeclared}"
