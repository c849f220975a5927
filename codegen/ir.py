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

    def methods_json(self) -> list[dict[str, Any]]:
        return [self.methods[m].as_json() for m in sorted(self.methods)]

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
    if schema is True or schema == {}:
        return "any"
    if not isinstance(schema, dict):
        return "any"
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


def build_protocol(norm: Normalized, overlay: Overlay) -> Protocol:
    doc: SchemaDocument = norm.doc
    defs = doc.defs
    version = doc.version
    warnings: list[str] = []
    where = f"{version}/schema.json"  # not the absolute path: warnings are kept in the manifest

    # method -> (def, kinds, directions, is-union-object)
    seen: dict[str, dict[str, Any]] = {}
    if not any(role.union in defs for role in overlay.roles):
        warnings.append(
            f"{where}: none of the role unions ({', '.join(r.union for r in overlay.roles)}) is defined: no methods"
        )
    for role in overlay.roles:
        union, kind, direction = role.union, role.kind, role.direction
        if union not in defs:
            continue
        for member, is_union_object in _union_members(defs, union):
            node = defs.get(member)
            method = _method_const(node)
            if method is None:
                warnings.append(f"{where}#{join_pointer(DEFS, union)}: member {member} has no `method` const; skipped")
                continue
            entry = seen.setdefault(method, {"defs": [], "kinds": set(), "directions": set()})
            entry["defs"].append((member, is_union_object))
            entry["kinds"].add(kind)
            entry["directions"].add(direction)

    methods: dict[str, Method] = {}
    for method, entry in seen.items():
        named = [d for d, is_obj in entry["defs"] if not is_obj]
        message = named[0] if named else entry["defs"][0][0]
        kinds = entry["kinds"]
        kind = INPUT_REQUEST if kinds == {INPUT_REQUEST} else REQUEST if REQUEST in kinds else next(iter(kinds))
        if len(kinds) > 1:
            warnings.append(f"method {method} appears with several kinds {sorted(kinds)}; using {kind}")
        directions = entry["directions"]
        direction = BOTH if len(directions) > 1 else next(iter(directions))
        node = defs[message]
        params_schema = _props(node).get("params")
        params = _ref_of(params_schema)
        if params_schema is not None and params is None:
            warnings.append(f"{where}#{join_pointer(DEFS, message, 'properties', 'params')}: params not a ref")
        params_required = "params" in node.get("required", [])

        result: list[str] = []
        if kind != NOTIFICATION:
            base = message[: -len("Request")] if message.endswith("Request") else message
            if base + "ResultResponse" in defs:
                result = _result_refs(_props(defs[base + "ResultResponse"]).get("result"))
            elif base + "Result" in defs:
                result = [base + "Result"]
            elif "EmptyResult" in defs:
                result = ["EmptyResult"]
            elif "Result" in defs:
                result = ["Result"]
            variants = _params_variants(defs, params)
            for aug in overlay.augmented_for(version):
                if aug.result in defs and aug.result not in result and any(aug.param in _props(v) for v in variants):
                    result.append(aug.result)
            if not result:
                warnings.append(f"request {method} ({message}) has no result def")

        may_require_input = any("inputRequests" in _props(defs.get(r)) for r in result)
        tags: dict[str, str] = {}
        default_tag = None
        if len(result) > 1:
            for r in result:
                tag, default = _result_tag(defs.get(r))
                if tag is None or tag in tags:
                    tags = {}
                    default_tag = None
                    break
                tags[tag] = r
                if default is not None:
                    default_tag = default
            if default_tag not in tags:
                default_tag = None

        gate_entry = overlay.gate_for(method, version)
        gate = None
        if gate_entry is not None:
            ref = gate_entry.by_param
            gate = Gate(
                side=gate_entry.side,
                path=gate_entry.path,
                param=ref.param if ref else None,
                param_default=ref.default if ref else None,
                param_paths=ref.paths if ref else (),
                param_requires=gate_entry.param_requires,
            )
        dep = overlay.deprecation_for(method, version)
        methods[method] = Method(
            method=method,
            kind=kind,
            direction=direction,
            message=message,
            params=params,
            params_required=params_required,
            result=tuple(result),
            may_require_input=may_require_input,
            capability=gate,
            deprecated=dep is not None,
            deprecation_reason=dep.reason if dep else None,
            result_tags=tuple(sorted(tags.items())),
            result_default_tag=default_tag,
        )

    era = HANDSHAKE if "initialize" in methods else MODERN
    def_infos = {name: _def_info(name, defs[name]) for name in sorted(defs)}
    return Protocol(
        version=version,
        era=era,
        source=str(doc.file),
        sha256=doc.sha256,
        methods=dict(sorted(methods.items())),
        defs=def_infos,
        errors=_errors(defs),
        warnings=warnings,
    )
