"""Write a Python file that uses a generated tree the way a user does, for the type checkers.

For every model class of every version in the tree it writes one construction from snake_case
names with every optional field omitted (required fields get the simplest value of their
annotated type), and for every name of the version-independent layer (`types`) an assignment of
each version's model to it. Everything comes from the generated tree itself (the `versions`
registry, each version's `models` module, pydantic's field list); nothing is listed by hand.

    python tests/user_types/make_constructions.py OUT.py [--package mcpgen.generated]
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import sys
import types
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from typing_extensions import NotRequired, Required, TypeAliasType, is_typeddict

NONE = "None"


class Writer:
    def __init__(self, package: str) -> None:
        self.package = package
        self.registry = importlib.import_module(f"{package}.versions")
        self.aliases: dict[str, str] = {}  # models module name -> local alias
        self.models: dict[str, types.ModuleType] = {}
        for version in self.registry.SUPPORTED:
            module = importlib.import_module(f"{self.registry.module(version).__name__}.models")
            alias = "v" + version.replace("-", "_")
            self.aliases[module.__name__] = alias
            self.models[alias] = module

    # -- values ---------------------------------------------------------------------------

    def value(self, tp: Any, stack: tuple[type[BaseModel], ...]) -> str | None:
        """A Python expression of static type `tp`, or None if none can be built (recursion)."""
        if isinstance(tp, TypeAliasType):
            return self.value(tp.__value__, stack)
        origin = typing.get_origin(tp)
        args = typing.get_args(tp)
        if origin is typing.Annotated:
            return self.value(args[0], stack)
        if tp is Any or tp is object:
            return NONE
        if tp is type(None) or tp is None:
            return NONE
        if origin is typing.Literal:
            return repr(args[0])
        if origin in (typing.Union, types.UnionType):
            members = [a for a in args if a is not type(None)]
            for member in members:
                found = self.value(member, stack)
                if found is not None:
                    return found
            return NONE if len(members) < len(args) else None
        if origin in (list, typing.List, tuple, set, frozenset):  # noqa: UP006
            return {list: "[]", tuple: "()", set: "set()", frozenset: "frozenset()"}.get(origin, "[]")
        if origin in (dict, typing.Dict) or tp is dict:  # noqa: UP006
            return "{}"
        if tp is list:
            return "[]"
        if tp is bool:
            return "False"
        if tp is int:
            return "0"
        if tp is float:
            return "0.0"
        if tp is str:
            return '"x"'
        if inspect.isclass(tp) and issubclass(tp, BaseModel):
            return self.construct(tp, stack)
        if is_typeddict(tp):
            return self.construct_dict(tp, stack)
        raise TypeError(f"no value for annotation {tp!r}")

    def ref(self, model: type[BaseModel]) -> str:
        module = model.__module__
        if module not in self.aliases:  # a submodule of a version's `models` package
            module = module.rpartition(".")[0]
        return f"{self.aliases[module]}.{model.__name__}"

    def construct(self, model: type[BaseModel], stack: tuple[type[BaseModel], ...] = ()) -> str | None:
        if model in stack:
            return None
        hints = typing.get_type_hints(model, include_extras=True)
        args = []
        for name, field in model.model_fields.items():
            if not field.is_required():
                continue
            found = self.value(hints[name], (*stack, model))
            if found is None:
                return None
            args.append(f"{name}={found}")
        return f"{self.ref(model)}({', '.join(args)})"

    def construct_dict(self, tp: Any, stack: tuple[Any, ...] = ()) -> str | None:
        """A dict display of a `TypedDict` with its required keys (wire names) only."""
        if tp in stack:
            return None
        hints = typing.get_type_hints(tp, include_extras=True)
        items = []
        for key in sorted(tp.__required_keys__):
            hint = hints[key]
            while typing.get_origin(hint) in (NotRequired, Required):
                hint = typing.get_args(hint)[0]
            found = self.value(hint, (*stack, tp))
            if found is None:
                return None
            items.append(f"{key!r}: {found}")
        return "{" + ", ".join(items) + "}"

    # -- file -----------------------------------------------------------------------------

    def model_classes(self, module: types.ModuleType) -> list[type[BaseModel]]:
        # every name the module exports (a `models` package creates its classes on first access),
        # defined in it or in one of its submodules (not imported from elsewhere)
        exported = [(name, getattr(module, name)) for name in getattr(module, "__all__", vars(module))]
        return [
            obj
            for _, obj in sorted(exported)
            if (
                inspect.isclass(obj)
                and (issubclass(obj, BaseModel) or is_typeddict(obj))
                and (obj.__module__ == module.__name__ or obj.__module__.startswith(module.__name__ + "."))
            )
        ]

    def source(self) -> str:
        lines = [
            '"""Generated by tests/user_types/make_constructions.py: user code the type checkers must accept."""',
            "",
            "from __future__ import annotations",
            "",
        ]
        for name, alias in sorted(self.aliases.items()):
            package, _, module = name.rpartition(".")
            lines.append(f"from {package} import {module} as {alias}")
        layer = None
        try:
            layer = importlib.import_module(f"{self.package}.types")
        except ModuleNotFoundError:
            pass
        if layer is not None:
            lines.append(f"from {self.package} import types as shared")
        count = 0
        for alias, module in self.models.items():
            lines += ["", "", f"def construct_{alias}() -> None:"]
            for model in self.model_classes(module):
                call = self.construct_dict(model) if is_typeddict(model) else self.construct(model)
                if call is None:
                    raise TypeError(f"cannot build {model.__module__}.{model.__name__} without recursion")
                lines.append(f"    m_{model.__name__}: {self.ref(model)} = {call}")
                lines.append(f"    print(m_{model.__name__})")
                count += 1
        if layer is not None:
            lines += ["", "", "def shared_layer() -> None:"]
            by_version = {self.registry.module(v).__name__ + ".models": v for v in self.registry.SUPPORTED}
            for name, versions in sorted(layer.VERSIONS.items()):
                for alias, module in self.models.items():
                    if by_version[module.__name__] not in versions:
                        continue
                    model = getattr(module, name, None)
                    if inspect.isclass(model) and issubclass(model, BaseModel):
                        call = self.construct_dict(model) if is_typeddict(model) else self.construct(model)
                        lines.append(f"    s_{alias}_{name}: shared.{name} = {call}")
                        lines.append(f"    print(s_{alias}_{name})")
        if count == 0:
            raise SystemExit("no models found: is the tree generated?")
        return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--package", default="mcpgen.generated")
    ns = parser.parse_args(argv)
    text = Writer(ns.package).source()
    ns.out.parent.mkdir(parents=True, exist_ok=True)
    ns.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
