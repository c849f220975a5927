"""The intermediate representation: one `Protocol` per version, derived from the schema alone.

Both emitters (models and tables) and `diff` read this, never the raw JSON.

Derivation, all by rule:
- methods come from role-union membership (the unions are named in `schema/roles.toml`:
  `ClientRequest` / `ServerRequest` / `ClientNotification` / `ServerNotification` give kind and
  direction, both unions -> both ways; `InputRequest` gives input requests embedded in
  results). A union may be an `anyOf`, a single `$ref`, or an object def that is itself the
  one member.
- the method string is the member's `method` const; a method reached through two defs is kept
  once, preferring the named member def over a role union that is an object.
- params: the member's `params` ref, required iff listed in `required`.
- result: `<Base>ResultResponse.result` when the version pairs responses, else `<Base>Result`,
  else `EmptyResult` (`Base` = def name without `Request`); plus any augmented result whose
  params property the params def (or one of its union members) has.
- MRTR: a result def carrying `inputRequests`; result tags from each result's `resultType`.
- capability gates and deprecations come from the `schema/` data files (`overlay`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .errors import join_pointer
from .loader import DEFS, SchemaDocument, iter_refs, ref_name
from .normalize import Normalized
from .overlay import Overlay

HANDSHAKE = "handshake"
MODERN = "modern"

CLIENT_TO_SERVER = "client_to_server"
SERVER_TO_CLIENT = "server_to_client"
BOTH = "both"

REQUEST = "request"
NOTIFICATION = "notification"
INPUT_REQUEST = "input_request"


@dataclass(frozen=True)
class Gate:
    side: str
    path: str
    param: str | None = None
    param_default: str | None = None
    param_paths: tuple[tuple[str, str], ...] = ()
    param_requires: tuple[tuple[str, str], ...] = ()
    # the capability path as keys when one has a dot in it (an extension id under `extensions`)
    keys: tuple[str, ...] = ()

    def as_json(self) -> dict[str, str]:
        return {"side": self.side, "path": self.path}


@dataclass(frozen=True)
class Method:
    method: str
    kind: str
    direction: str
    message: str
    params: str | None
    params_required: bool
    result: tuple[str, ...]
    may_require_input: bool
    capability: Gate | None
    deprecated: bool
    deprecation_reason: str | None = None
    # resultType tag -> result def, and the tag an absent resultType means
    result_tags: tuple[tuple[str, str], ...] = ()
    result_default_tag: str | None = None
    name_param: str | None = None  # the params field the `Mcp-Name` header mirrors

    def as_json(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "kind": self.kind,
            "direction": self.direction,
            "params": self.params,
            "params_required": self.params_required,
            "result": list(self.result),
            "may_require_input": self.may_require_input,
            "capability": self.capability.as_json() if self.capability else None,
            "deprecated": self.deprecated,
            "name_param": self.name_param,
        }


@dataclass(frozen=True)
class FieldInfo:
    name: str
    type: str
    required: bool


@dataclass(frozen=True)
class DefInfo:
    name: str
    shape: str
    fields: tuple[FieldInfo, ...] = ()
    refs: tuple[str, ...] = ()  # the defs this def refers to directly


@dataclass(frozen=True)
class ErrorInfo:
    code: int
    name: str
    model: str


@dataclass
class Protocol:
    version: str
    era: str
    source: str
    sha256: str
    methods: dict[str, Method]
    defs: dict[str, DefInfo]
    errors: tuple[ErrorInfo, ...] = ()
    warnings: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        """What diffs and reports call it."""
        return self.version

    def methods_json(self) -> list[dict[str, Any]]:
        return [self.methods[m].as_json() for m in sorted(self.methods)]

    def message_defs(self) -> frozenset[str]:
        """The defs the method tables name: each method's message, params and results."""
        names: set[str] = set()
        for m in self.methods.values():
            names.update((m.message, *m.result, *(model for _, model in m.result_tags)))
            if m.params:
                names.add(m.params)
        return frozenset(names)

    def result_closure(self) -> list[str]:
        """Every def a method's result can carry: the result defs and, transitively, every def they
        refer to (content blocks, tools, resources, ...). Sorted."""
        todo = [r for m in self.methods.values() for r in m.result]
        seen: set[str] = set()
        while todo:
            name = todo.pop()
            if name in seen or name not in self.defs:
                continue
            seen.add(name)
            todo.extend(self.defs[name].refs)
        return sorted(seen)


# -- helpers ------------------------------------------------------------------------------


def _props(node: Any) -> dict[str, Any]:
    return node.get("properties") or {} if isinstance(node, dict) else {}


def _ref_of(node: Any) -> str | None:
    if isinstance(node, dict) and isinstance(node.get("$ref"), str):
        return ref_name(node["$ref"])
    return None


def _union_members(defs: dict[str, Any], name: str) -> list[tuple[str, bool]]:
    """Member def names of a role union, and whether the member is the union def itself."""
    node = defs[name]
    members: list[tuple[str, bool]] = []
    for key in ("anyOf", "oneOf"):
        if isinstance(node.get(key), list):
            for branch in node[key]:
                ref = _ref_of(branch)
                if ref is not None:
                    members.append((ref, False))
            return members
    ref = _ref_of(node)
    if ref is not None:
        return [(ref, False)]
    if isinstance(_props(node).get("method"), dict):
        return [(name, True)]
    return []


def _method_const(node: Any) -> str | None:
    value = _props(node).get("method")
    if isinstance(value, dict):
        if isinstance(value.get("const"), str):
            return str(value["const"])
        if isinstance(value.get("enum"), list) and len(value["enum"]) == 1 and isinstance(value["enum"][0], str):
            return str(value["enum"][0])
    return None


def _result_refs(node: Any) -> list[str]:
    ref = _ref_of(node)
    if ref is not None:
        return [ref]
    out = []
    for key in ("anyOf", "oneOf"):
        for branch in node.get(key, []) if isinstance(node, dict) else []:
            r = _ref_of(branch)
            if r is not None:
                out.append(r)
    return out


def _params_variants(defs: dict[str, Any], params: str | None) -> list[Any]:
    if params is None:
        return []
    node = defs.get(params)
    variants = [node]
    for key in ("anyOf", "oneOf"):
        for branch in node.get(key, []) if isinstance(node, dict) else []:
            r = _ref_of(branch)
            variants.append(defs.get(r) if r else branch)
    return variants


def _result_tag(node: Any) -> tuple[str | None, str | None]:
    """(tag this result def carries, tag an absent resultType means) from its `resultType` schema."""
    schema = _props(node).get("resultType")
    if not isinstance(schema, dict):
        return None, None
    tag = None
    if isinstance(schema.get("const"), str):
        tag = schema["const"]
    elif isinstance(schema.get("enum"), list) and len(schema["enum"]) == 1:
        tag = schema["enum"][0]
    default = schema.get("default") if isinstance(schema.get("default"), str) else None
    return tag, default


def type_summary(schema: Any) -> str:
    """A short, canonical description of a property schema, for diffs."""
    if not isinstance(schema, dict) or not schema:  # `true`, `{}` or not a schema
        return "any"
    by_keyword = _keyword_summary(schema)
    return by_keyword if by_keyword is not None else _types_summary(schema)


def _keyword_summary(schema: dict[str, Any]) -> str | None:
    """The summary of a schema told by a `$ref`, `const`, `enum` or union; None for the others."""
    ref = _ref_of(schema)
    if ref is not None:
        return ref
    if "const" in schema:
        return f"const {schema['const']!r}"
    if "enum" in schema:
        return "enum[" + ", ".join(repr(v) for v in schema["enum"]) + "]"
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            return " | ".join(type_summary(b) for b in schema[key])
    return None


def _types_summary(schema: dict[str, Any]) -> str:
    """The summary of a schema by its `type` (one or a list): `list[...]`, `map[...]`, `object`,
    or the type name with its `format`."""
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind] if kind else []
    parts = []
    for k in kinds:
        if k == "array":
            parts.append(f"list[{type_summary(schema.get('items', {}))}]")
        elif k == "object":
            extra = schema.get("additionalProperties")
            parts.append(f"map[{type_summary(extra)}]" if isinstance(extra, dict) and extra else "object")
        else:
            parts.append(str(k) + (f"({schema['format']})" if "format" in schema else ""))
    return " | ".join(parts) if parts else "any"


def _def_info(name: str, node: Any) -> DefInfo:
    if not isinstance(node, dict):
        return DefInfo(name, "any")
    refs = tuple(sorted({ref_name(ref) for _, ref in iter_refs(node)}))
    props = _props(node)
    if props or node.get("type") == "object":
        required = set(node.get("required", []))
        fields = tuple(FieldInfo(p, type_summary(s), p in required) for p, s in sorted(props.items()))
        return DefInfo(name, "object", fields, refs)
    if "anyOf" in node or "oneOf" in node:
        return DefInfo(name, "union: " + type_summary(node), (), refs)
    return DefInfo(name, type_summary(node), (), refs)


def _errors(defs: dict[str, Any]) -> tuple[ErrorInfo, ...]:
    """Error codes fixed by a `code` const: on an error object, or on a response's `error` object."""
    found: dict[int, ErrorInfo] = {}
    for name in sorted(defs):
        node = defs[name]
        code = _props(node).get("code")
        if isinstance(code, dict) and isinstance(code.get("const"), int) and "message" in _props(node):
            found.setdefault(code["const"], ErrorInfo(code["const"], name, name))
    for name in sorted(defs):
        error_ref = _ref_of(_props(defs[name]).get("error"))
        if error_ref is None:
            continue
        code = _props(defs.get(error_ref)).get("code")
        if isinstance(code, dict) and isinstance(code.get("const"), int):
            found[code["const"]] = ErrorInfo(code["const"], name, error_ref)
    return tuple(found[c] for c in sorted(found))


# -- build --------------------------------------------------------------------------------


def _where(version: str) -> str:
    """The schema file as warnings name it: not its absolute path, as warnings are kept in the manifest."""
    return f"{version}/schema.json"


@dataclass
class _Occurrences:
    """Where a method string occurs in the role unions."""

    defs: list[tuple[str, bool]] = field(default_factory=list)  # (member def, is the union def itself)
    kinds: set[str] = field(default_factory=set)
    directions: set[str] = field(default_factory=set)

    def message(self) -> str:
        """The def of the message: the first named member, preferred over a union that is an object."""
        named = [d for d, is_obj in self.defs if not is_obj]
        return named[0] if named else self.defs[0][0]

    def direction(self) -> str:
        return BOTH if len(self.directions) > 1 else next(iter(self.directions))


def _methods_from_roles(
    defs: dict[str, Any], overlay: Overlay, where: str, warnings: list[str]
) -> dict[str, _Occurrences]:
    """Every method string of the role unions' members, with the defs, kinds and directions it
    occurs with, in the order the roles and their members are listed."""
    if not any(role.union in defs for role in overlay.roles):
        warnings.append(
            f"{where}: none of the role unions ({', '.join(r.union for r in overlay.roles)}) is defined: no methods"
        )
    seen: dict[str, _Occurrences] = {}
    for role in overlay.roles:
        if role.union not in defs:
            continue
        for member, is_union_object in _union_members(defs, role.union):
            method = _method_const(defs.get(member))
            if method is None:
                pointer = join_pointer(DEFS, role.union)
                warnings.append(f"{where}#{pointer}: member {member} has no `method` const; skipped")
                continue
            entry = seen.setdefault(method, _Occurrences())
            entry.defs.append((member, is_union_object))
            entry.kinds.add(role.kind)
            entry.directions.add(role.direction)
    return seen


def _kind_of(method: str, kinds: set[str], warnings: list[str]) -> str:
    """One kind for a method met with several: a request wins, unless all are input requests."""
    kind = INPUT_REQUEST if kinds == {INPUT_REQUEST} else REQUEST if REQUEST in kinds else next(iter(kinds))
    if len(kinds) > 1:
        warnings.append(f"method {method} appears with several kinds {sorted(kinds)}; using {kind}")
    return kind


def _params_of(defs: dict[str, Any], message: str, where: str, warnings: list[str]) -> tuple[str | None, bool]:
    """The params def of a message (its `params` ref), and whether `params` is required."""
    node = defs[message]
    params_schema = _props(node).get("params")
    params = _ref_of(params_schema)
    if params_schema is not None and params is None:
        warnings.append(f"{where}#{join_pointer(DEFS, message, 'properties', 'params')}: params not a ref")
    return params, "params" in node.get("required", [])


def _paired_result(defs: dict[str, Any], message: str) -> list[str]:
    """The result defs of a request by name: `<Base>ResultResponse.result` when the version pairs
    responses, else `<Base>Result`, else the generic `EmptyResult` or `Result`."""
    base = message.removesuffix("Request")
    if base + "ResultResponse" in defs:
        return _result_refs(_props(defs[base + "ResultResponse"]).get("result"))
    for name in (base + "Result", "EmptyResult", "Result"):
        if name in defs:
            return [name]
    return []


def _results_of(defs: dict[str, Any], message: str, params: str | None, overlay: Overlay, version: str) -> list[str]:
    """The result defs of a request: its paired result, plus every augmented result whose params
    property its params def (or one of that def's union members) has."""
    result = _paired_result(defs, message)
    variants = _params_variants(defs, params)
    for aug in overlay.augmented_for(version):
        if aug.result in defs and aug.result not in result and any(aug.param in _props(v) for v in variants):
            result.append(aug.result)
    return result


def _result_tags(defs: dict[str, Any], result: list[str]) -> tuple[dict[str, str], str | None]:
    """resultType tag -> result def, and the tag an absent resultType means, for a request with
    several results; nothing when a result carries no tag or two carry the same one."""
    if len(result) <= 1:
        return {}, None
    tags: dict[str, str] = {}
    default_tag = None
    for r in result:
        tag, default = _result_tag(defs.get(r))
        if tag is None or tag in tags:
            return {}, None
        tags[tag] = r
        if default is not None:
            default_tag = default
    return tags, default_tag if default_tag in tags else None


def _gate_of(overlay: Overlay, method: str, version: str) -> Gate | None:
    gate_entry = overlay.gate_for(method, version)
    if gate_entry is None:
        return None
    ref = gate_entry.by_param
    return Gate(
        side=gate_entry.side,
        path=gate_entry.path,
        param=ref.param if ref else None,
        param_default=ref.default if ref else None,
        param_paths=ref.paths if ref else (),
        param_requires=gate_entry.param_requires,
    )


def _method(method: str, found: _Occurrences, norm: Normalized, overlay: Overlay, warnings: list[str]) -> Method:
    """The dispatch entry of one method: kind, direction, params, results and their tags, MRTR,
    capability gate and deprecation."""
    defs, version = norm.doc.defs, norm.doc.version
    where = _where(version)
    message = found.message()
    kind = _kind_of(method, found.kinds, warnings)
    params, params_required = _params_of(defs, message, where, warnings)
    result: list[str] = []
    if kind != NOTIFICATION:
        result = _results_of(defs, message, params, overlay, version)
        if not result:
            warnings.append(f"request {method} ({message}) has no result def")
    tags, default_tag = _result_tags(defs, result)
    dep = overlay.deprecation_for(method, version)
    return Method(
        method=method,
        kind=kind,
        direction=found.direction(),
        message=message,
        params=params,
        params_required=params_required,
        result=tuple(result),
        may_require_input=any("inputRequests" in _props(defs.get(r)) for r in result),
        capability=_gate_of(overlay, method, version),
        deprecated=dep is not None,
        deprecation_reason=dep.reason if dep else None,
        result_tags=tuple(sorted(tags.items())),
        result_default_tag=default_tag,
        name_param=overlay.name_param_for(method, version),
    )


def _era_of(methods: dict[str, Method]) -> str:
    """The handshake era has `initialize`; a version without it is of the modern era."""
    return HANDSHAKE if "initialize" in methods else MODERN


def build_protocol(norm: Normalized, overlay: Overlay) -> Protocol:
    doc: SchemaDocument = norm.doc
    warnings: list[str] = []
    found = _methods_from_roles(doc.defs, overlay, _where(doc.version), warnings)
    methods = {method: _method(method, entry, norm, overlay, warnings) for method, entry in found.items()}
    return Protocol(
        version=doc.version,
        era=_era_of(methods),
        source=str(doc.file),
        sha256=doc.sha256,
        methods=dict(sorted(methods.items())),
        defs={name: _def_info(name, doc.defs[name]) for name in sorted(doc.defs)},
        errors=_errors(doc.defs),
        warnings=warnings,
    )
