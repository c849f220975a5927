"""The runtime's package map, checked from the source (an `ast` walk, no imports).

Layers, lowest first: `protocol` (the rules, pure) → `core` (transport interface, session, pipes)
→ `client` and `server` side by side (neither imports the other), with `auth` split the same way
(`auth.shared` → `auth.client` / `auth.server`) → `cli` and the facades. Every import counts
(module level, inside functions, under `TYPE_CHECKING`) for the package rules; among the imports
that run, no two modules may import each other through any chain. Nothing registers itself at
import time.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

RUNTIME = Path(__file__).resolve().parents[2] / "runtime"

# What each package may import (besides itself). Facades and deprecated aliases sit on top.
ALLOWED: dict[str, set[str]] = {
    "protocol": set(),
    "core": {"protocol"},
    "auth.shared": {"protocol"},
    "auth.client": {"auth.shared", "protocol", "core"},
    "auth.server": {"auth.shared", "protocol", "core"},
    "client": {"core", "protocol", "auth.shared", "auth.client"},
    "server": {"core", "protocol", "auth.shared", "auth.server"},
    "auth": {"auth.shared", "auth.client", "auth.server"},
    "cli": {"client", "server", "core", "protocol", "auth", "auth.shared", "auth.client", "auth.server"},
}
# The deprecated aliases of the layout before this one: anything may be reached from them, and
# nothing in the runtime may import them.
DEPRECATED = {"transport", "mrtr", "capabilities", "registry"}
FACADE = "(facade)"


@dataclass(frozen=True)
class Import:
    source: str  # module (dotted, relative to runtime)
    target: str  # module or package imported
    runs: bool  # False under `if TYPE_CHECKING:`
    line: int


def module_name(path: Path) -> str:
    parts = list(path.relative_to(RUNTIME).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


MODULES = {module_name(p): p for p in RUNTIME.rglob("*.py")}


def package_of(module: str) -> str:
    parts = module.split(".")
    if not parts[0]:
        return FACADE
    if parts[0] == "auth" and len(parts) > 1 and parts[1] in ("shared", "client", "server"):
        return f"auth.{parts[1]}"
    if len(parts) == 1 and f"{parts[0]}" not in {m.split(".")[0] for m in MODULES if "." in m}:
        return parts[0] if parts[0] in DEPRECATED else FACADE
    return parts[0]


def resolve(current: str, is_package: bool, node: ast.ImportFrom) -> list[str]:
    if node.level == 0:
        name = node.module or ""
        if not (name == "mcpgen.runtime" or name.startswith("mcpgen.runtime.")):
            return []
        base = name[len("mcpgen.runtime") :].lstrip(".").split(".") if name != "mcpgen.runtime" else []
    else:
        base = current.split(".") if current else []
        if not is_package:
            base = base[:-1]
        base = base[: len(base) - (node.level - 1)] + (node.module.split(".") if node.module else [])
    found = []
    for alias in node.names:  # `from . import wire` imports a module; `from .x import Y`, module x
        candidate = ".".join([*base, alias.name])
        found.append(candidate if candidate in MODULES else ".".join(base))
    return found


def imports() -> list[Import]:
    found: list[Import] = []
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(), str(path))
        is_package = path.name == "__init__.py"

        def walk(node: ast.AST, runs: bool, module: str = module, is_package: bool = is_package) -> None:
            for child in ast.iter_child_nodes(node):
                child_runs = runs
                if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                    for inner in child.body:
                        walk(ast.Module(body=[inner], type_ignores=[]), False)
                    for inner in child.orelse:
                        walk(ast.Module(body=[inner], type_ignores=[]), runs)
                    continue
                if isinstance(child, ast.ImportFrom):
                    for target in resolve(module, is_package, child):
                        found.append(Import(module, target, child_runs, child.lineno))
                elif isinstance(child, ast.Import):
                    for alias in child.names:
                        if alias.name.startswith("mcpgen.runtime."):
                            found.append(Import(module, alias.name[len("mcpgen.runtime.") :], child_runs, child.lineno))
                walk(child, child_runs)

        walk(tree, True)
    return found


IMPORTS = imports()


def test_every_import_goes_down_the_layers() -> None:
    wrong = []
    for found in IMPORTS:
        source, target = package_of(found.source), package_of(found.target)
        if source == target:
            continue
        if target in DEPRECATED:
            wrong.append(f"{found.source}:{found.line} imports the deprecated alias {found.target}")
        elif source in (FACADE, *DEPRECATED):
            continue
        elif target == FACADE:
            wrong.append(f"{found.source}:{found.line} imports the package facade")
        elif target not in ALLOWED[source]:
            wrong.append(f"{found.source}:{found.line} ({source}) imports {found.target} ({target})")
    assert not wrong, "\n".join(wrong)


def test_the_client_and_the_server_never_import_each_other() -> None:
    crossing = [
        f"{i.source}:{i.line} -> {i.target}"
        for i in IMPORTS
        if {package_of(i.source), package_of(i.target)} in ({"client", "server"}, {"auth.client", "auth.server"})
    ]
    assert not crossing, crossing


def strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's algorithm, iterative: the components with more than one node."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(component)
    return found


def test_no_circle_between_packages_counting_every_import() -> None:
    graph: dict[str, set[str]] = defaultdict(set)
    for found in IMPORTS:
        source, target = package_of(found.source), package_of(found.target)
        if source != target:
            graph[source].add(target)
    assert not strongly_connected(graph)


def test_no_circle_between_modules_among_the_imports_that_run() -> None:
    graph: dict[str, set[str]] = defaultdict(set)
    for found in IMPORTS:
        if found.runs and found.source != found.target:
            graph[found.source].add(found.target)
            parent = found.target.rpartition(".")[0]
            while parent:  # importing a.b.c runs a and a.b first
                if parent != found.source and not found.source.startswith(parent + "."):
                    graph[found.source].add(parent)
                parent = parent.rpartition(".")[0]
    assert not strongly_connected(graph)


def test_the_checker_sees_a_circle_and_a_wrong_way_import() -> None:
    assert strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]
    assert package_of("server.http.app") == "server" and package_of("auth.client.flow") == "auth.client"
    assert "client" not in ALLOWED["server"] and "server" not in ALLOWED["client"]
    assert any(i.source == "server.session" and i.target == "core.session" and i.runs for i in IMPORTS)


def test_nothing_registers_itself_at_import_time() -> None:
    """No module runs a call at module level for its effect (registering an era, a handler...):
    the deprecated aliases' own warning is the one exception."""
    effects = []
    for module, path in MODULES.items():
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
                call = ast.unparse(node.value.func)
                if not (package_of(module) in DEPRECATED and call == "warnings.warn"):
                    effects.append(f"{module}:{node.lineno}: {call}(...)")
    assert not effects, effects


def test_the_eras_and_their_order_do_not_depend_on_what_was_imported_first() -> None:
    script = (
        "from mcpgen.runtime.server import Server\n"
        "s = Server('x')\n"
        "print([r.name for r in s.eras.newest_first], sorted(s.serving))\n"
    )
    alone = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    everything = subprocess.run(
        [sys.executable, "-c", "import mcpgen.runtime, mcpgen.runtime.client\n" + script],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert alone == everything == "['modern', 'handshake'] ['handshake', 'modern']\n"
