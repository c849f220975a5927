"""Lay one version's models out as a package whose classes are created on first use.

Creating ~150 pydantic classes is most of what importing a version costs, even with
`defer_build`. The models module made by `models.emit_models_and_names` is split, by syntax tree,
into submodules, one per strongly connected component of its "refers to" graph (a definition and
the definitions that refer back to it, directly or not, stay together; the graph is read from the
code made from the schema, never from a list of names). Each submodule imports the components it
refers to, so the submodules form a DAG and importing one creates only what it needs.

The package's `__init__` defines nothing at run time: its `__getattr__` (PEP 562) imports the
submodule defining a name on first access (`models.CallToolRequest`), and type checkers see every
name through `if TYPE_CHECKING:` imports. `__all__` lists them all.
"""

from __future__ import annotations

import ast
import keyword
import re
from dataclasses import dataclass, field

from .errors import GenerationError
from .models import statement_names, tidy, trails, used_names

INIT = "__init__.py"


@dataclass
class _Unit:
    """A top-level definition: its statements' line ranges (decorators and trailing docstrings
    and calls included) and the module-level names it defines."""

    names: list[str]
    ranges: list[tuple[int, int]] = field(default_factory=list)
    nodes: list[ast.stmt] = field(default_factory=list)


def _first_line(node: ast.stmt) -> int:
    decorators: list[ast.expr] = getattr(node, "decorator_list", [])
    return min([node.lineno, *(d.lineno for d in decorators)])


def _components(order: list[str], edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components (Tarjan), each listed in `order`, dependencies first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    position = {name: at for at, name in enumerate(order)}

    def visit(root: str) -> None:
        # iterative, so a long chain of definitions cannot exhaust the recursion limit
        work: list[tuple[str, list[str]]] = [(root, sorted(edges[root], key=position.__getitem__))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, targets = work[-1]
            if targets:
                target = targets.pop(0)
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, sorted(edges[target], key=position.__getitem__)))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                members: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    members.append(member)
                    if member == node:
                        break
                found.append(sorted(members, key=position.__getitem__))

    for name in order:
        if name not in index:
            visit(name)
    return found


def _module_name(name: str, taken: set[str]) -> str:
    """`CallToolRequest` -> `_call_tool_request` (unique among `taken`)."""
    snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()
    base = "_" + snake.strip("_")
    if not base.isidentifier() or keyword.iskeyword(base):
        base = "_def"
    candidate, number = base, 2
    while candidate in taken:
        candidate, number = f"{base}_{number}", number + 1
    taken.add(candidate)
    return candidate


def _deeper(node: ast.ImportFrom) -> str:
    """A module-level import of the models module, written for a submodule one level deeper."""
    level = node.level + 1 if node.level else 0
    return ast.unparse(ast.ImportFrom(module=node.module, names=node.names, level=level)) + "\n"


def _units(tree: ast.Module) -> tuple[list[ast.ImportFrom], list[_Unit]]:
    """A models module's imports and its definitions, in order."""
    imports: list[ast.ImportFrom] = []
    units: list[_Unit] = []
    for at, node in enumerate(tree.body):
        last = node.end_lineno or node.lineno
        if at == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # the module's docstring
        if isinstance(node, ast.ImportFrom) and node.module != "__future__":
            imports.append(node)
            continue
        names = statement_names(node)
        if names:
            units.append(_Unit(names, [(_first_line(node), last)], [node]))
        elif units and trails(node, units[-1].names):
            units[-1].ranges.append((node.lineno, last))
            units[-1].nodes.append(node)
        else:
            raise GenerationError(
                f"cannot lay the models out as a package: unexpected top-level statement at line {node.lineno}"
            )
    return imports, units


def split_package(code: str) -> dict[str, str]:
    """The files of a `models` package (`__init__.py` and one `_<name>.py` per component) holding
    what `code` (a models module, unformatted) defines, the module's docstring the package's. The
    same code gives the same files."""
    tree = ast.parse(code)
    doc = ast.get_docstring(tree, clean=False) or "Pydantic models. Generated by mcpgen; do not edit."
    imports, units = _units(tree)
    owner: dict[str, int] = {}
    for at, unit in enumerate(units):
        for name in unit.names:
            if name in owner:
                raise GenerationError(f"cannot lay the models out as a package: {name} is defined twice")
            owner[name] = at
    order = [str(at) for at in range(len(units))]
    edges = {
        str(at): {str(owner[name]) for name in used_names(*unit.nodes) if name in owner and owner[name] != at}
        for at, unit in enumerate(units)
    }
    lines = code.splitlines(keepends=True)
    header = "".join(_deeper(node) for node in imports)
    taken: set[str] = set()
    module_of: dict[str, str] = {}  # defined name -> submodule
    files: dict[str, str] = {}
    for component in _components(order, edges):
        members = [units[int(at)] for at in component]
        module = _module_name(members[0].names[0], taken)
        own = {name for unit in members for name in unit.names}
        needed: dict[str, set[str]] = {}
        for unit in members:
            for name in used_names(*unit.nodes):
                if name in owner and name not in own:
                    needed.setdefault(module_of[name], set()).add(name)
        body = "".join("\n\n" + "".join(lines[first - 1 : last]) for unit in members for first, last in unit.ranges)
        refs = "".join(f"from .{m} import {', '.join(sorted(needed[m]))}\n" for m in sorted(needed))
        names = ", ".join(sorted(own))
        text = f'"""{names}: part of the `models` package. Generated by mcpgen; do not edit."""\n\n'
        files[f"{module}.py"], _ = tidy(text + header + refs + body)
        for name in own:
            module_of[name] = module
    if any(name.startswith("_") or name in ("TYPE_CHECKING", "Any", "importlib") for name in module_of):
        clash = sorted(n for n in module_of if n.startswith("_") or n in ("TYPE_CHECKING", "Any", "importlib"))
        raise GenerationError(f"cannot lay the models out as a package: names {clash} clash with its own")
    files[INIT] = _init(doc, module_of)
    return {name: files[name] for name in sorted(files)}


def _init(doc: str, module_of: dict[str, str]) -> str:
    names = sorted(module_of)
    checked = "".join(f"    from .{module_of[n]} import {n} as {n}\n" for n in names)
    table = "".join(f"    {n!r}: {module_of[n]!r},\n" for n in names)
    listed = "".join(f"    {n!r},\n" for n in names)
    return f'''"""{doc}

Each model is created on first use: `models.CallToolRequest` imports the submodule that defines
it (and the ones it refers to), not the others. Type checkers see every name here.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
{checked}
_MODULES: dict[str, str] = {{
{table}}}
"""Each name -> the submodule defining it."""

__all__ = [
{listed}]

if not TYPE_CHECKING:  # type checkers see the names above, not an attribute of any name

    def __getattr__(name: str) -> Any:
        module = _MODULES.get(name)
        if module is None:
            raise AttributeError(f"module {{__name__!r}} has no attribute {{name!r}}")
        value = getattr(importlib.import_module(f"{{__name__}}.{{module}}"), name)
        globals()[name] = value
        return value


def __dir__() -> list[str]:
    return sorted({{*globals(), *_MODULES}})
'''
