"""An extension's dispatch rows and models against one core version: the IR of a pinned extension.

An extension schema is self-contained: it repeats the core defs it uses. It is read on a core
version it applies to (`extensions.toml`: `since`/`until`), after the same loading, fix rules
and normalisation as that version, and compared with it:

- **rows**: a def with a `method` const whose method the core version lacks is a method of the
  extension. Kind comes from its shape (a message with an `id` is a request), direction (and the
  `Mcp-Name` params field, the gate side) from `extensions.toml`; params and result by the same
  rules as a core version (`params` ref; `<Base>Result`). Every own method is gated on
  `extensions.<id>` (`Gate.keys`, the id being one key). A core method the data says the extension
  augments gets the core row with one more result (and its `resultType` tag).
- **reuse**: a def the extension repeats is reused from the core version when it has the same
  shape (descriptions and titles aside) and every def it refers to is reused too; the others it
  repeats *differ* (on their own, or only through a def they refer to) and are emitted.
- **removes**: the core methods the data says it takes away (and which of them the version has).

Nothing here names an extension, a method or a def: a second extension flows through the same path.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from .errors import GenerationError
from .ir import (
    NOTIFICATION,
    REQUEST,
    Gate,
    Method,
    Protocol,
    _def_info,
    _method_const,
    _methods_from_roles,
    _paired_result,
    _params_of,
    _props,
    _result_tags,
)
from .loader import iter_refs, ref_name
from .normalize import Normalized, canonical_json
from .overlay import UNGATED, ExtensionEntry, Overlay

EXTENSIONS_KEY = "extensions"  # where capabilities list extensions (SEP-2133), the id being the next key


@dataclass
class ExtensionProtocol(Protocol):
    """One extension read on one core version (`version`, `era` are the core version's)."""

    ext_id: str = ""
    release: str = ""
    package: str = ""  # the Python package of the extension in a generated tree
    capability: tuple[str, ...] = ()  # keys of its capability: ("extensions", id)
    gate_side: str = ""
    settings: str | None = None
    augments: tuple[str, ...] = ()  # core methods whose rows `methods` replaces
    removes: tuple[str, ...] = ()  # core methods the extension takes away
    removes_present: tuple[str, ...] = ()  # ... of those, the ones this core version defines
    repeats: tuple[str, ...] = ()  # defs the extension repeats from the core version
    reused: tuple[str, ...] = ()  # ... of those, the ones reused from the core version's models
    differs: tuple[str, ...] = ()  # ... the ones whose own shape differs
    differs_through: tuple[str, ...] = ()  # ... the ones alike but referring to a def that differs
    # augmented core method -> the results the extension adds to its row (the rest are the core's)
    added_results: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def module_of(self, method: str, name: str) -> str:
        """Which models a name in a row is: the extension's (`m`) or the core version's (`core`)."""
        if method in self.added_results and name not in self.added_results[method]:
            return "core"
        return "m"

    @property
    def label(self) -> str:
        return f"{self.ext_id} ({self.release}) on {self.version}"

    def report_lines(self) -> list[str]:
        """What `generate` and `methods` say about the extension beside its rows."""
        own = len(self.defs) - len(self.reused)
        lines = [f"reuses {len(self.reused)} defs of {self.version}'s models; emits {own} of its own"]
        if self.differs or self.differs_through:
            lines.append(
                f"repeats {len(self.repeats)} defs of {self.version}; differ: "
                + (", ".join(self.differs) or "-")
                + (f" (and through them: {', '.join(self.differs_through)})" if self.differs_through else "")
            )
        elif self.repeats:
            lines.append(f"repeats {len(self.repeats)} defs of {self.version}, all alike")
        if self.removes:
            present = ", ".join(self.removes_present) or "none"
            lines.append(f"removes {', '.join(self.removes)} ({self.version} defines: {present})")
        if self.augments:
            lines.append(f"augments {', '.join(self.augments)}")
        return lines


def _message_defs(norm: Normalized) -> dict[str, list[str]]:
    """Method string -> the (not hoisted) defs whose `method` is that const, in name order."""
    found: dict[str, list[str]] = {}
    for name in sorted(norm.doc.defs):
        if name in norm.hoisted_from:
            continue
        method = _method_const(norm.doc.defs[name])
        if method is not None:
            found.setdefault(method, []).append(name)
    return found


def reusable_defs(ext: Normalized, core: Normalized) -> tuple[list[str], list[str], list[str], list[str]]:
    """(repeated, reused, differing, differing only through a ref) def names, each sorted.

    A repeated def is reused when it has the same shape as the core's (`canonical_json`, plus the
    facts normalisation lifted out of it) and so has, transitively, everything it refers to."""
    ext_defs, core_defs = ext.doc.defs, core.doc.defs
    repeated = sorted(set(ext_defs) & set(core_defs))

    def facts(norm: Normalized, name: str) -> tuple[Any, ...]:
        return (
            canonical_json(norm.doc.defs[name]),
            norm.require_any_of.get(name),
            norm.extra.get(name),
            name in norm.any_json,
        )

    alike = {name for name in repeated if facts(ext, name) == facts(core, name)}
    reused = set(alike)
    while True:
        dropped = {n for n in reused if any(ref_name(r) not in reused for _, r in iter_refs(ext_defs[n]))}
        if not dropped:
            break
        reused -= dropped
    differs = sorted(set(repeated) - alike)
    through = sorted(alike - reused)
    return repeated, sorted(reused), differs, through


def _gate(entry: ExtensionEntry, side: str | None) -> Gate | None:
    chosen = side or entry.gate
    if chosen == UNGATED:
        return None
    keys = (EXTENSIONS_KEY, entry.id)
    return Gate(side=chosen, path=".".join(keys), keys=keys)


def _own_method(  # noqa: PLR0913 - the method, its message def, and where it comes from
    method: str, message: str, norm: Normalized, entry: ExtensionEntry, role: tuple[str, str] | None, label: str
) -> tuple[Method | None, list[str]]:
    """The row of a method the extension's schema defines, or None (and why) without a direction."""
    warnings: list[str] = []
    defs = norm.doc.defs
    data = entry.method(method)
    if data is None and role is None:
        return None, [
            f"{label}: {message} defines method {method}, but extensions.toml gives it no direction; left out"
        ]
    kind = role[0] if role is not None else (REQUEST if "id" in _props(defs[message]) else NOTIFICATION)
    direction = data.direction if data is not None else role[1] if role is not None else ""
    params, params_required = _params_of(defs, message, label, warnings)
    result: list[str] = []
    if kind != NOTIFICATION:
        result = _paired_result(defs, message)
        if not result:
            warnings.append(f"{label}: request {method} ({message}) has no result def")
    tags, default_tag = _result_tags(defs, result)
    row = Method(
        method=method,
        kind=kind,
        direction=direction,
        message=message,
        params=params,
        params_required=params_required,
        result=tuple(result),
        may_require_input=any("inputRequests" in _props(defs.get(r)) for r in result),
        capability=_gate(entry, data.gate if data is not None else None),
        deprecated=False,
        result_tags=tuple(sorted(tags.items())),
        result_default_tag=default_tag,
        name_param=data.name_param if data is not None else None,
    )
    return row, warnings


def _augmented(
    entry: ExtensionEntry, norm: Normalized, core_norm: Normalized, core: Protocol, label: str
) -> tuple[dict[str, Method], dict[str, tuple[str, ...]], list[str]]:
    """The core rows the extension augments with a result of its own; the results it adds to
    each; warnings."""
    rows: dict[str, Method] = {}
    added: dict[str, tuple[str, ...]] = {}
    warnings: list[str] = []
    for aug in entry.augments:
        base = rows.get(aug.method) or core.methods.get(aug.method)
        if base is None:
            warnings.append(f"{label}: augments {aug.method}, which {core.version} does not define; left out")
            continue
        if aug.result not in norm.doc.defs:
            raise GenerationError(f"extensions.toml: {entry.id} augments {aug.method} with {aug.result}, not a def")
        result = (*base.result, aug.result)
        own = (*added.get(aug.method, ()), aug.result)
        defs = {**core_norm.doc.defs, **{r: norm.doc.defs[r] for r in own}}
        tags, default_tag = _result_tags(defs, list(result))
        if len(tags) != len(result):
            warnings.append(f"{label}: the results of {aug.method} are not told apart by resultType once augmented")
        rows[aug.method] = replace(
            base, result=result, result_tags=tuple(sorted(tags.items())), result_default_tag=default_tag
        )
        added[aug.method] = own
    return rows, added, warnings


def build_extension(  # noqa: PLR0913 - the extension, its core version, and how to name it
    norm: Normalized,
    core_norm: Normalized,
    core: Protocol,
    overlay: Overlay,
    *,
    ext_id: str,
    release: str,
    package: str,
) -> ExtensionProtocol:
    """The IR of extension `ext_id` (its normalised schema `norm`) on the core version `core`."""
    entry = overlay.extension(ext_id)
    if entry is None:
        raise GenerationError(
            f"extension {ext_id} has no entry in extensions.toml "
            "(the core versions it applies to, who sends its methods)"
        )
    label = f"{ext_id} ({release})"
    warnings: list[str] = []
    roles: dict[str, tuple[str, str]] = {}
    if any(role.union in norm.doc.defs for role in overlay.roles):  # an extension schema may have role unions
        for method, found in _methods_from_roles(norm.doc.defs, overlay, label, warnings).items():
            roles[method] = (next(iter(sorted(found.kinds))), found.direction())
    methods: dict[str, Method] = {}
    for method, messages in _message_defs(norm).items():
        if method in core.methods:
            continue  # a core method the extension repeats (its defs are compared below)
        if len(messages) > 1:
            warnings.append(f"{label}: method {method} is defined by {', '.join(messages)}; using {messages[0]}")
        row, why = _own_method(method, messages[0], norm, entry, roles.get(method), label)
        warnings.extend(why)
        if row is not None:
            methods[method] = row
    for data in entry.methods:
        if data.method not in methods:
            warnings.append(
                f"{label}: extensions.toml lists {data.method}, which the extension's schema does not define"
            )
    augmented, added, why = _augmented(entry, norm, core_norm, core, label)
    warnings.extend(why)
    methods.update(augmented)
    if entry.settings is not None and entry.settings not in norm.doc.defs:
        warnings.append(f"{label}: its settings def {entry.settings} is not in its schema")
    repeats, reused, differs, through = reusable_defs(norm, core_norm)
    return ExtensionProtocol(
        version=core.version,
        era=core.era,
        source=str(norm.doc.file),
        sha256=norm.doc.sha256,
        methods=dict(sorted(methods.items())),
        defs={name: _def_info(name, norm.doc.defs[name]) for name in sorted(norm.doc.defs)},
        errors=(),
        warnings=[*warnings, *norm.warnings],
        ext_id=ext_id,
        release=release,
        package=package,
        capability=(EXTENSIONS_KEY, ext_id),
        gate_side=entry.gate,
        settings=entry.settings if entry.settings in norm.doc.defs else None,
        augments=tuple(sorted(augmented)),
        removes=entry.removes,
        removes_present=tuple(m for m in entry.removes if m in core.methods),
        repeats=tuple(repeats),
        reused=tuple(reused),
        differs=tuple(differs),
        differs_through=tuple(through),
        added_results=added,
    )
