"""The runtime's view of a generated tree: versions, eras, dispatch tables, and the facts derived from them.

`VersionRegistry` wraps a generated `versions` module (by default `mcpgen.generated.versions`,
but any tree made by `mcpgen generate --out` works), so the runtime never names a version or a
model. Facts the schema already has (which methods exist and who sends them, error codes,
content kinds, which result fields a version stamps) are read from the tables here, once.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping
from functools import cache, cached_property, lru_cache
from types import ModuleType
from typing import TYPE_CHECKING, Annotated, Any, get_args, get_origin

from pydantic import BaseModel
from typing_extensions import NotRequired, Required, is_typeddict

if TYPE_CHECKING:
    from mcpgen.generated._spec import MethodSpec


def _load_default_tree() -> ModuleType:
    try:
        return importlib.import_module("mcpgen.generated.versions")
    except ModuleNotFoundError as exc:  # pragma: no cover - depends on the installation
        raise ModuleNotFoundError(
            "mcpgen's generated tree is missing: run `mcpgen sync && mcpgen generate` "
            "(or install a built mcpgen wheel, which ships it)"
        ) from exc


class VersionRegistry:
    """Versions and tables of one generated tree."""

    def __init__(self, tree: ModuleType | None = None) -> None:
        self.tree = tree if tree is not None else _load_default_tree()
        self.supported: tuple[str, ...] = tuple(self.tree.SUPPORTED)
        self._methods = lru_cache(maxsize=None)(self._load_methods)

    # -- tables ------------------------------------------------------------------------------

    def _load_methods(self, version: str) -> Mapping[str, MethodSpec]:
        table: Mapping[str, MethodSpec] = self.tree.methods(version)
        return table

    def methods(self, version: str) -> Mapping[str, MethodSpec]:
        """The dispatch table (method -> MethodSpec) of `version`."""
        return self._methods(version)

    def spec(self, version: str, method: str) -> MethodSpec | None:
        return self.methods(version).get(method)

    def models(self, version: str) -> ModuleType:
        module: ModuleType = importlib.import_module(f"{self.tree.module(version).__name__}.models")
        return module

    @cached_property
    def input_methods(self) -> frozenset[str]:
        """Methods that may ask for input in some version (on a handshake-era session the legacy
        shim turns the same handler's input requests into server->client requests)."""
        return frozenset(
            method
            for version in self.supported
            for method, spec in self.methods(version).items()
            if spec.may_require_input
        )

    def may_require_input(self, method: str) -> bool:
        return method in self.input_methods

    # -- eras and versions ---------------------------------------------------------------------

    def era(self, version: str) -> str:
        era: str = self.tree.era(version)
        return era

    def compare_dates(self, a: str, b: str) -> int | None:
        """-1, 0 or 1 as version `a` is older than, the same as, or newer than `b` (as dates, never
        as strings); None when either is not a dated version."""
        try:
            found: int = self.tree.compare(a, b)
        except ValueError:
            return None
        return found

    def newest_first(self, versions: Iterable[str]) -> list[str]:
        known = [v for v in set(versions) if v in self.supported]
        return sorted(known, key=self.supported.index, reverse=True)

    def newest_mutual(self, theirs: Iterable[str], ours: Iterable[str]) -> str | None:
        found: str | None = self.tree.newest_mutual(list(theirs), list(ours))
        return found

    def check_versions(self, versions: Iterable[str] | None) -> tuple[str, ...]:
        """A configured subset of versions, validated (default: all), oldest first."""
        if versions is None:
            return self.supported
        chosen = list(dict.fromkeys(versions))
        unknown = [v for v in chosen if v not in self.supported]
        if unknown:
            raise ValueError(f"unsupported protocol versions {unknown}; this tree has {list(self.supported)}")
        if not chosen:
            raise ValueError("at least one protocol version is needed")
        return tuple(v for v in self.supported if v in chosen)

    # -- facts derived from the tables -----------------------------------------------------------

    def result_fields(self, spec: MethodSpec) -> frozenset[str]:
        """The wire names of the fields of `spec`'s result models (what a server may stamp)."""
        return _result_fields(spec)

    def has_field(self, version: str, method: str, path: tuple[str, ...], *, result: bool = False) -> bool:
        """Does following `path` (wire names) from `method`'s params model (or result model) in
        `version` reach a field? E.g. whether the client capabilities of `initialize` carry
        `extensions` in that version: `("capabilities", "extensions")`."""
        spec = self.spec(version, method)
        if spec is None:
            return False
        model = _model_of(spec.result[0]) if result and spec.result else _model_of(spec.params) if not result else None
        for step in path[:-1]:
            model = _model_of(_field_annotation(model, step))
        return model is not None and _field_annotation(model, path[-1]) is not None

    def content_types(self, version: str) -> frozenset[str]:
        """The content block kinds (`type` tags) a `tools/call` result may carry in `version`."""
        spec = self.spec(version, "tools/call")
        tags: set[str] = set()
        for model in spec.result if spec is not None else ():
            item = _field_annotation(_model_of(model), "content")
            for member in _union_members(_list_item(item)):
                tags.update(_literal_values(_field_annotation(_model_of(member), "type")))
        return frozenset(tags)


def _model_of(annotation: Any) -> Any:
    """The model (or generated TypedDict) an annotation stands for."""
    for member in _union_members(annotation):
        if isinstance(member, type) and (issubclass(member, BaseModel) or is_typeddict(member)):
            return member
    return None


def _unwrap(annotation: Any) -> Any:
    value = getattr(annotation, "__value__", None)  # a TypeAliasType
    while value is not None:
        annotation = value
        value = getattr(annotation, "__value__", None)
    if get_origin(annotation) is Annotated:
        return _unwrap(get_args(annotation)[0])
    return annotation


def _union_members(annotation: Any) -> list[Any]:
    annotation = _unwrap(annotation)
    args = get_args(annotation)
    if args and get_origin(annotation) is not list and get_origin(annotation) is not dict:
        out: list[Any] = []
        for arg in args:
            out.extend(_union_members(arg))
        return out
    return [annotation]


def _list_item(annotation: Any) -> Any:
    for member in _union_members(annotation):
        if get_origin(member) is list:
            return get_args(member)[0]
    return None


def _literal_values(annotation: Any) -> list[str]:
    annotation = _unwrap(annotation)
    return [a for a in get_args(annotation) if isinstance(a, str)]


def _field_annotation(model: Any, wire_name: str) -> Any:
    if model is None:
        return None
    if is_typeddict(model):  # a generated TypedDict is keyed by wire names
        annotation = model.__annotations__.get(wire_name)
        while get_origin(annotation) in (NotRequired, Required):
            annotation = get_args(annotation)[0]
        return annotation
    for name, info in model.model_fields.items():
        if (info.alias or name) == wire_name:
            return info.annotation
    return None


@cache
def _result_fields(spec: MethodSpec) -> frozenset[str]:
    names: set[str] = set()
    for model in spec.result:
        model_class = _model_of(model)
        if is_typeddict(model_class):
            names.update(model_class.__annotations__)
        elif model_class is not None:
            names.update((info.alias or name) for name, info in model_class.model_fields.items())
    return frozenset(names)


# The runtime's earlier name for the registry, kept for users who pass `registry=Protocol(...)`.
Protocol = VersionRegistry
