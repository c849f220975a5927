"""The runtime's view of a generated tree: versions, eras, dispatch tables, and the facts derived from them.

`VersionRegistry` wraps a generated `versions` module (by default `mcpgen.generated.versions`,
but any tree made by `mcpgen generate --out` works), so the runtime never names a version or a
model. Facts the schema already has (which methods exist and who sends them, error codes,
content kinds, which result fields a version stamps) are read from the tables here, once.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Iterable, Mapping
from functools import cache, cached_property, lru_cache
from types import ModuleType
from typing import TYPE_CHECKING, Annotated, Any, get_args, get_origin

from pydantic import BaseModel
from typing_extensions import NotRequired, Required, is_typeddict

if TYPE_CHECKING:
    from mcpgen.generated._spec import ExtensionSpec, MethodSpec

log = logging.getLogger(__name__)


def _load_default_tree() -> ModuleType:
    try:
        return importlib.import_module("mcpgen.generated.versions")
    except ModuleNotFoundError as exc:  # pragma: no cover - depends on the installation
        raise ModuleNotFoundError(
            "mcpgen's generated tree is missing: run `mcpgen sync && mcpgen generate` "
            "(or install a built mcpgen wheel, which ships it)"
        ) from exc


class VersionRegistry:
    """Versions and tables of one generated tree.

    Args:
        tree: the tree's `versions` module (default: `mcpgen.generated.versions`, the tree mcpgen
            ships); a tree made by `mcpgen generate --out` works the same.

    Attributes:
        supported: the tree's protocol versions, oldest first.

    Raises:
        ModuleNotFoundError: no tree was given and mcpgen's own is missing (not generated yet).
    """

    def __init__(self, tree: ModuleType | None = None) -> None:
        self.tree = tree if tree is not None else _load_default_tree()
        self.supported: tuple[str, ...] = tuple(self.tree.SUPPORTED)
        self._methods = lru_cache(maxsize=None)(self._load_methods)
        self._tables = lru_cache(maxsize=None)(self._applied)

    # -- tables ------------------------------------------------------------------------------

    def _load_methods(self, version: str) -> Mapping[str, MethodSpec]:
        table: Mapping[str, MethodSpec] = self.tree.methods(version)
        return table

    def methods(self, version: str) -> Mapping[str, MethodSpec]:
        """The dispatch table (method -> MethodSpec) of `version`."""
        return self._methods(version)

    def spec(self, version: str, method: str) -> MethodSpec | None:
        """The table row of `method` in `version` (None: the version has no such method)."""
        return self.methods(version).get(method)

    # -- extensions ----------------------------------------------------------------------------

    def extensions(self, version: str) -> Mapping[str, ExtensionSpec]:
        """The pinned extensions of the tree that apply to `version`, by id (none for a tree made
        before extensions were generated)."""
        found = getattr(self.tree, "extensions", None)
        if found is None or version not in self.supported:
            return {}
        extensions: Mapping[str, ExtensionSpec] = found(version)
        return extensions

    def extension(self, ext_id: str, version: str) -> ExtensionSpec | None:
        """Extension `ext_id` on `version`, or None when the tree has no such extension there."""
        return self.extensions(version).get(ext_id)

    def table(self, version: str, extensions: Iterable[str] = ()) -> Mapping[str, MethodSpec]:
        """`version`'s table with the given extensions in force (those that apply to it): their
        methods in, the methods they remove out, their rows for the methods they augment.
        `extensions` are extension ids; those the tree lacks for `version` are ignored."""
        if not extensions:  # the common case, on every request: the version's own table
            return self._methods(version)
        return self._tables(version, frozenset(extensions))

    def _applied(self, version: str, extensions: frozenset[str]) -> Mapping[str, MethodSpec]:
        table = self.methods(version)
        for ext_id in sorted(extensions):
            found = self.extension(ext_id, version)
            if found is not None:
                table = found.apply(table)
        return table

    def name_param(self, method: str, version: object, extensions: Iterable[str] | None = None) -> str | None:
        """The params field the `Mcp-Name` header mirrors for `method` (None: no such header), as
        the table of `version` says, with the `extensions` in force (all that apply when None).
        For a version the tree lacks, the newest version that has the method says."""
        candidates = [version] if isinstance(version, str) and version in self.supported else []
        candidates += [v for v in reversed(self.supported) if v not in candidates]
        for candidate in candidates:
            ids = self.extensions(candidate) if extensions is None else extensions
            spec = self.table(candidate, ids).get(method)
            if spec is not None:
                return spec.name_param
        return None

    def build_validators(self, version: str, extensions: Iterable[str] = ()) -> None:
        """Build now the validators that reading and checking the messages of `version`'s table
        (with `extensions` in force) builds when each method is first used: the generated models
        are deferred (`defer_build`), so each method's first message builds its params and
        result validators, tens of milliseconds each on a quiet machine (a large result union
        about a hundred), many times that on a loaded one. A server calls it before it is ready,
        so no first request waits on it; a second call finds everything built and builds nothing."""
        for spec in self.table(version, extensions).values():
            build_row_validators(spec)

    def models(self, version: str) -> ModuleType:
        """The generated models module of `version` (`mcpgen.generated.vYYYY_MM_DD.models`)."""
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
        """Whether `method` may ask for input in some version (see `input_methods`)."""
        return method in self.input_methods

    # -- eras and versions ---------------------------------------------------------------------

    def era(self, version: str) -> str:
        """The era `version` belongs to (`"handshake"` or `"modern"`), as the tree says."""
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
        """The `versions` this tree supports, newest first (the others left out)."""
        known = [v for v in set(versions) if v in self.supported]
        return sorted(known, key=self.supported.index, reverse=True)

    def newest_mutual(self, theirs: Iterable[str], ours: Iterable[str]) -> str | None:
        """The newest version in both `theirs` and `ours` (None: none in common)."""
        found: str | None = self.tree.newest_mutual(list(theirs), list(ours))
        return found

    def check_versions(self, versions: Iterable[str] | None) -> tuple[str, ...]:
        """A configured subset of `versions`, validated (None: all), oldest first.

        Raises:
            ValueError: a version the tree does not have, or none at all.
        """
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
        `extensions` in that version: `("capabilities", "extensions")`. A list steps into its
        items: `("tools", "execution")` of `tools/list`'s result. With `result`, the path starts
        from the result model."""
        spec = self.spec(version, method)
        if spec is None:
            return False
        model = _model_of(spec.result[0]) if result and spec.result else _model_of(spec.params) if not result else None
        for step in path[:-1]:
            annotation = _field_annotation(model, step)
            model = _model_of(annotation) or _model_of(_list_item(annotation))  # a list steps into its items
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


def build_row_validators(spec: MethodSpec) -> None:
    """Build what `spec.parse_params` and `spec.parse_result` build on first use (the same
    objects: a model's own validator, or the row's adapter for a union or a TypedDict). One that
    cannot be built fails where it is used, as it would without this: not here."""
    if spec.params is not None:
        if _is_model_class(spec.params):
            _build_model(spec.params)
        else:
            _read_adapter(spec, "params_adapter")
    if not spec.result:
        return
    if len(spec.result) == 1 and _is_model_class(spec.result[0]):
        _build_model(spec.result[0])
    else:
        _read_adapter(spec, "result_adapter")


def _read_adapter(spec: MethodSpec, name: str) -> None:
    try:
        getattr(spec, name)  # a cached property: reading it builds it
    except Exception:  # (the row's method fails when used, with this same error)
        log.debug("%s: its %s could not be built ahead of use", spec.method, name, exc_info=True)


def _is_model_class(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _build_model(model: type[BaseModel]) -> None:
    if not model.__pydantic_complete__:
        model.model_rebuild(raise_errors=False)  # one that cannot be built fails where it is used, as before


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
"""The runtime's earlier name for `VersionRegistry` (the same class)."""
