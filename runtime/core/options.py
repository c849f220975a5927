"""Grouped constructor options, and the keywords they replace.

`Client` and `Server` take their options in groups (frozen dataclasses with a default for every
field). A keyword that moved into a group keeps working for one release: `resolve_groups` folds
it into its group with a `DeprecationWarning` naming the new spelling, and refuses a keyword
given together with the group it moved into (which of the two was meant is not clear).
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Moved:
    """Where a deprecated keyword went: the field at `path` of the group given as `group=`.

    - `path`: the field, nested groups first (`("caching", "ttl_ms")`);
    - `spread`: the keyword took a group of its own (this class) whose fields all moved to the
      root of `group`, under the same names (`path` is then empty);
    - `none_ignored`: None was the keyword's "not given": it warns, and changes nothing.
    """

    group: str
    path: tuple[str, ...] = ()
    spread: type[Any] | None = None
    none_ignored: bool = False

    def paths(self) -> list[tuple[str, ...]]:
        """The fields this keyword sets, from the group keyword down."""
        if self.spread is not None:
            return [(self.group, f.name) for f in dataclasses.fields(self.spread)]
        return [(self.group, *self.path)]

    def spelling(self, owner: str, root: Any) -> str:
        """`Owner(group=Group(field=Nested(name=...)))`: how to say it now (`root`: the group's default)."""
        if self.spread is not None:
            inner = ", ".join(f"{f.name}=..." for f in dataclasses.fields(self.spread))
            return f"{owner}({self.group}={type(root).__name__}({inner}))"
        steps: list[tuple[str, str]] = []
        obj = root
        for name in self.path:
            steps.append((type(obj).__name__, name))
            obj = getattr(obj, name)
        text = "..."
        for kind, name in reversed(steps):
            text = f"{kind}({name}={text})"
        return f"{owner}({self.group}={text})"


def _set(obj: Any, path: tuple[str, ...], value: Any) -> Any:
    head, rest = path[0], path[1:]
    return dataclasses.replace(obj, **{head: _set(getattr(obj, head), rest, value) if rest else value})


_defaults: dict[type[Any], Any] = {}


def default_group(kind: type[Any]) -> Any:
    """`kind()`: one instance shared by every owner when the group is frozen and its defaults are
    plain values (no field with a default factory), a new one otherwise."""
    shared = _defaults.get(kind)
    if shared is not None:
        return shared
    made = kind()
    params = getattr(kind, "__dataclass_params__", None)
    if (
        params is not None
        and params.frozen
        and all(f.default_factory is dataclasses.MISSING for f in dataclasses.fields(kind))
    ):
        _defaults[kind] = made
    return made


def group_types(options: type[Any]) -> dict[str, type[Any]]:
    """The groups of an owner's options dataclass, keyword -> group class: each field's default
    factory (the group made with its defaults), so the groups are stated once, as fields.

    Raises:
        TypeError: a field whose default is not made by a class (not a group).
    """
    kinds: dict[str, type[Any]] = {}
    for item in dataclasses.fields(options):
        factory = item.default_factory
        if not isinstance(factory, type):
            raise TypeError(f"{options.__name__}.{item.name} is not a group: its default is not made by a class")
        kinds[item.name] = factory
    return kinds


def _overlap(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    return a[: len(b)] == b or b[: len(a)] == a


def resolve_groups(
    owner: str,
    kinds: Mapping[str, type[Any]],
    moves: Mapping[str, Moved],
    groups: Mapping[str, Any],
    deprecated: Mapping[str, Any],
) -> dict[str, Any]:
    """Every group of `owner` (`kinds`: keyword -> group class): the one given in `groups`, else
    its default, with the `deprecated` keywords (`moves`: keyword -> `Moved`) folded in, each
    with a `DeprecationWarning` pointed at the code that called `owner(...)` (through the
    side's own `resolve_*_options`).

    Raises:
        TypeError: a keyword that is neither a group nor a moved one, a moved keyword together
            with the group it moved into, or two moved keywords for the same field.
    """
    resolved: dict[str, Any] = {}
    for name, kind in kinds.items():
        given = groups.get(name)
        resolved[name] = default_group(kind) if given is None else given
    placed: dict[tuple[str, ...], str] = {}
    for keyword, value in deprecated.items():
        moved = moves.get(keyword)
        if moved is None:
            raise TypeError(f"{owner}() got an unexpected keyword argument {keyword!r}")
        group = moved.group
        if groups.get(group) is not None:
            raise TypeError(f"{owner}() got both {group}= and the deprecated {keyword}=; use {group}= only")
        warnings.warn(
            f"{owner}({keyword}=...) is deprecated; use {moved.spelling(owner, kinds[group]())}",
            DeprecationWarning,
            stacklevel=4,  # here, resolve_*_options, owner.__init__, its caller
        )
        if value is None and moved.none_ignored:
            continue
        for path in moved.paths():
            for earlier, other in placed.items():
                if _overlap(path, earlier):
                    raise TypeError(f"{owner}() got both {other}= and {keyword}= (both deprecated); use {group}= only")
        for path in moved.paths():
            placed[path] = keyword
        if moved.spread is not None:
            kind = moved.spread
            if not isinstance(value, kind):
                raise TypeError(f"{owner}({keyword}=...) takes {kind.__name__}(...), not {type(value).__name__}")
            changes = {f.name: getattr(value, f.name) for f in dataclasses.fields(kind)}
            resolved[group] = dataclasses.replace(resolved[group], **changes)
        else:
            resolved[group] = _set(resolved[group], moved.path, value)
    return resolved
