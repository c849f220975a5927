"""Every public name of the runtime and every command of the CLI is documented, as the reference renders it.

The reference (docs/reference/) renders docstrings with mkdocstrings, which reads the source with
griffe and leaves out what has no docstring; so this reads the source the same way and fails on:

- a public name of `mcpgen.runtime` or `mcpgen.runtime.auth` (their `__all__`) without a docstring;
- a public method, property or function of those classes (inherited ones from mcpgen's own base
  classes included, since the reference shows them) without a docstring;
- a parameter of any of them (an option of a constructor, a dataclass field, a keyword of a
  method) that its docstring does not name: in an `Args:` section, in backquotes (`name`), or by an
  attribute docstring of its own;
- a command, argument-taking option or flag of `mcpgen` without help text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import click
import griffe
import mcpgen.runtime
import mcpgen.runtime.auth
import pytest
from mcpgen.codegen.cli import main
from support.doc_pages import REPO

MODULES = (mcpgen.runtime, mcpgen.runtime.auth)
MAPPED = ("codegen", "generated", "runtime")  # the folders setuptools maps onto `mcpgen.*`


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> griffe.Module:
    """`mcpgen` as griffe (the reference's loader) reads it: the checkout's folders, linked into place."""
    root = tmp_path_factory.mktemp("docstrings")
    (root / "mcpgen").mkdir()
    for name in MAPPED:
        (root / "mcpgen" / name).symlink_to(REPO / name, target_is_directory=True)
    loader = griffe.GriffeLoader(search_paths=[str(root)], docstring_parser=griffe.Parser.google)
    loaded = loader.load("mcpgen")
    loader.resolve_aliases(external=False, implicit=False)
    assert isinstance(loaded, griffe.Module)
    return loaded


def target(obj: griffe.Object | griffe.Alias) -> griffe.Object | None:
    if not isinstance(obj, griffe.Alias):
        return obj
    try:
        final = obj.final_target
    except (griffe.AliasResolutionError, griffe.CyclicAliasError):
        return None
    return final if final.path.startswith("mcpgen.") else None


def text(obj: griffe.Object) -> str:
    return obj.docstring.value.strip() if obj.docstring else ""


def named(docstrings: list[griffe.Object], name: str, owner: griffe.Object | None) -> bool:
    """Whether parameter `name` is documented: an `Args` or `Attributes` entry, `name` in backquotes,
    or an attribute docstring of its own."""
    for obj in docstrings:
        if obj.docstring is None:
            continue
        if re.search(rf"`{re.escape(name)}\b", obj.docstring.value):
            return True
        for section in obj.docstring.parsed:
            if section.kind in (griffe.DocstringSectionKind.parameters, griffe.DocstringSectionKind.attributes):
                if any(item.name == name for item in section.value):
                    return True
    if owner is not None and name in owner.members:
        member = target(owner.members[name])
        return member is not None and bool(text(member))
    return False


def parameters(function: griffe.Function) -> Iterator[str]:
    for param in function.parameters:
        if param.name in ("self", "cls") or param.kind in (
            griffe.ParameterKind.var_positional,
            griffe.ParameterKind.var_keyword,
        ):
            continue
        yield param.name


def problems_of_function(function: griffe.Function, path: str) -> Iterator[str]:
    if not text(function):
        yield f"{path}: no docstring"
        return
    for name in parameters(function):
        if not named([function], name, None):
            yield f"{path}: parameter {name!r} is not named in its docstring"


def problems_of_class(cls: griffe.Class, path: str) -> Iterator[str]:
    if not text(cls):
        yield f"{path}: no docstring"
    init = cls.all_members.get("__init__")
    init = target(init) if init is not None else None
    if isinstance(init, griffe.Function) and init.path.startswith("mcpgen."):
        where: list[griffe.Object] = [cls, init]
        for name in parameters(init):
            if not named(where, name, cls):
                yield f"{path}: option {name!r} is not named in the class's docstring"
    for name, member in cls.all_members.items():
        if name.startswith("_"):
            continue
        resolved = target(member)
        if resolved is None or isinstance(resolved, griffe.Attribute):
            continue  # plain attributes: state, shown when documented; options are checked above
        if isinstance(resolved, griffe.Function):
            if "property" in resolved.labels:
                if not text(resolved):
                    yield f"{path}.{name}: no docstring"
                continue
            yield from problems_of_function(resolved, f"{path}.{name}")
        elif isinstance(resolved, griffe.Class):
            yield from problems_of_class(resolved, f"{path}.{name}")


def problems(package: griffe.Module, module: object) -> list[str]:
    found: list[str] = []
    prefix = module.__name__  # type: ignore[attr-defined]
    griffe_module = package[prefix.removeprefix("mcpgen.")]
    for name in module.__all__:  # type: ignore[attr-defined]
        obj = target(griffe_module[name])
        path = f"{prefix}.{name}"
        if obj is None:
            found.append(f"{path}: cannot be resolved in the source")
        elif isinstance(obj, griffe.Class):
            found.extend(problems_of_class(obj, path))
        elif isinstance(obj, griffe.Function):
            found.extend(problems_of_function(obj, path))
        elif not text(obj):
            found.append(f"{path}: no docstring")
    return found


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_every_public_name_is_documented(package: griffe.Module, module: object) -> None:
    found = problems(package, module)
    assert not found, "\n".join(found)


def commands(command: click.Command, path: str) -> Iterator[tuple[str, click.Command]]:
    yield path, command
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            yield from commands(sub, f"{path} {name}")


def test_every_command_and_option_of_the_cli_has_help() -> None:
    missing: list[str] = []
    for path, command in commands(main, "mcpgen"):
        if not (command.help or command.short_help):
            missing.append(f"{path}: no help")
        for param in command.params:
            if isinstance(param, click.Option) and not param.hidden and not param.help:
                missing.append(f"{path} {param.opts[0]}: no help")
    assert missing == []
