"""Reshape a (fixed) schema so every model the emitters need is a named def.

- `allOf` of object schemas is merged into one object (later members win on conflicts); an
  `allOf` with one member that is a bare union (`anyOf`/`oneOf` and nothing else) is first
  distributed over it: `allOf [A, anyOf [B, C]]` is `anyOf [allOf [A, B], allOf [A, C]]`.
- An inline schema that is a copy of a def (an object with properties, or a union with an
  object branch; equal to that def alone, descriptions inside it included, its own root
  annotations aside) becomes a `$ref` to it, so a schema that inlines its defs (as zod exports
  do) names its models once.
- A def that is only a `$ref` to another def becomes a copy of its target, so it is a model
  of its own (`EmptyResult` is a result, not a wrapper around one).
- Every inline object schema with properties is hoisted into a def named from its parent and
  property path (`CompleteRequestParams` + `argument` -> `CompleteRequestParamsArgument`;
  array items add `Item`, map values `Value`, union branches their tag or `Option<n>`).
- Unions whose members all carry a distinct required `const` on one property get a
  `discriminator` (fast, strict parsing on `method`, `type`, ...). A def that is a union of
  objects whose members share a required property with a few fixed values each, but not one
  value per member, is split by it (`Normalized.shape_splits`): each value names the members
  that allow it, which the model emitter turns into a tagged union.
- The "at least one of these keys" idiom (`anyOf` of bare `required` lists) is lifted out of
  the schema into `Normalized.require_any_of`, which the model emitter turns into a validator.

Nothing here knows a def name: the rules are about shapes only.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field
from typing import Any

from .errors import GenerationError, join_pointer
from .loader import DEFS, REF_PREFIX, SchemaDocument, make_ref, ref_name

# Keywords whose value is one subschema, and those whose value maps names to subschemas,
# or lists subschemas. `properties` is handled separately (its keys are data, not keywords).
_ONE = (
    "items",
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
    "additionalItems",
)
_MAP = ("patternProperties", "dependentSchemas")
_LIST = ("anyOf", "oneOf", "allOf", "prefixItems")


# a union split by the values of one property: (property, {value: [(member def, its required keys)]})
Split = tuple[str, dict[str, list[tuple[str, frozenset[str]]]]]


@dataclass
class Normalized:
    """The model-ready schema: every object is a named def; plus facts the emitters need."""

    doc: SchemaDocument
    # def name -> groups of wire names; a valid instance must have every key of some group
    require_any_of: dict[str, list[list[str]]] = field(default_factory=dict)
    # hoisted def name -> JSON pointer of the inline schema it came from
    hoisted_from: dict[str, str] = field(default_factory=dict)
    # def name -> (discriminating property, {tag: member def name}) for root unions
    discriminators: dict[str, tuple[str, dict[str, str]]] = field(default_factory=dict)
    # def name -> (property, {value: [(member def name, its required keys)]}) for root unions of
    # objects whose members share a required property of a few values each, not one per member
    shape_splits: dict[str, Split] = field(default_factory=dict)
    # defs that accept every JSON value, emitted as `Any` (JSON parsing already guarantees JSON)
    any_json: list[str] = field(default_factory=list)
    # def name -> "forbid" for closed objects (additionalProperties: false); the default is "allow"
    extra: dict[str, str] = field(default_factory=dict)
    # schema keywords the models do not enforce, with where they are
    warnings: list[str] = field(default_factory=list)


def pascal(token: str) -> str:
    """`_meta` -> `Meta`, `inputSchema` -> `InputSchema`, `io.x/clientInfo` -> `IoXClientInfo`."""
    parts = [p for p in re.split(r"[^0-9A-Za-z]+", token) if p]
    name = "".join(p[0].upper() + p[1:] for p in parts)
    if not name:
        return "Value"
    if name[0].isdigit():
        name = "N" + name
    return name


def is_object_schema(node: Any) -> bool:
    return isinstance(node, dict) and "$ref" not in node and bool(node.get("properties"))


def normalize(doc: SchemaDocument) -> Normalized:
    out = doc.copy()
    defs = out.defs
    norm = Normalized(out)
    _clean_descriptions(defs)
    try:
        _merge_all_of_everywhere(defs)
    except GenerationError as exc:
        raise GenerationError(exc.message, file=doc.file, pointer=exc.pointer) from None
    _copy_ref_aliases(defs)
    norm.any_json = _collapse_any_json(defs)
    _refer_to_copied_defs(defs)
    _hoist_inline_objects(norm)
    _lift_require_any_of(norm)
    _add_discriminators(norm)
    for name, node in defs.items():
        if isinstance(node, dict) and node.get("additionalProperties") is False:
            norm.extra[name] = "forbid"
    norm.warnings = [*norm.warnings, *_unenforced(defs)]
    return norm


# Keywords datamodel-code-generator drops: the models accept what these would refuse.
UNENFORCED = (
    "not",
    "if",
    "then",
    "else",
    "uniqueItems",
    "dependentRequired",
    "dependentSchemas",
    "propertyNames",
    "contains",
    "unevaluatedProperties",
    "unevaluatedItems",
)


def _unenforced(defs: dict[str, Any]) -> list[str]:
    found: list[str] = []

    def visit(node: Any, pointer: tuple[str, ...]) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key in UNENFORCED and not (key == "uniqueItems" and value is False):
                    found.append(f"{join_pointer(*pointer, key)}: `{key}` is not enforced by the models")
                if key in ("properties", *_MAP) and isinstance(value, dict):
                    for k, v in value.items():
                        visit(v, (*pointer, key, k))
                elif key in (*_ONE, *_LIST, "items") and isinstance(value, (dict, list)):
                    visit(value, (*pointer, key))
        elif isinstance(node, list):
            for i, value in enumerate(node):
                visit(value, (*pointer, str(i)))

    for name, node in defs.items():
        visit(node, (DEFS, name))
    return sorted(found)


# -- descriptions ------------------------------------------------------------------------

_LINK = re.compile(r"\{@link ([^}]*)\}")


def _clean_descriptions(defs: dict[str, Any]) -> None:
    """Turn TypeDoc `{@link X}` / `{@link X | text}` (whose `|` the JSON export drops) into code spans."""
    names = sorted(defs, key=len, reverse=True)

    def link_text(match: re.Match[str]) -> str:
        content = match.group(1).strip()
        if "|" in content:
            content = content.split("|", 1)[1].strip()
        else:
            for name in names:
                if content.startswith(name):
                    content = content[len(name) :].strip() or name
                    break
        return content if "`" in content else f"`{content}`"

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "description" and isinstance(value, str) and "{@link" in value:
                    node[key] = _LINK.sub(link_text, value)
                elif isinstance(value, (dict, list)):
                    visit(value)
        elif isinstance(node, list):
            for value in node:
                visit(value)

    visit(defs)


# -- allOf ---------------------------------------------------------------------------------


def _resolve(defs: dict[str, Any], node: Any, seen: frozenset[str] = frozenset()) -> Any:
    while isinstance(node, dict) and "$ref" in node and len(node) <= 2:
        name = ref_name(node["$ref"])
        if name in seen:
            break
        seen = seen | {name}
        node = defs[name]
    return node


def _merge_objects(defs: dict[str, Any], members: list[Any]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for member in members:
        part = copy.deepcopy(_resolve(defs, member))
        if isinstance(part, dict) and "allOf" in part:
            part = {**{k: v for k, v in part.items() if k != "allOf"}, **_merge_objects(defs, part["allOf"])}
        if not isinstance(part, dict):
            continue
        for key, value in part.items():
            if key == "properties":
                props = merged.setdefault("properties", {})
                for pname, pschema in value.items():
                    if isinstance(props.get(pname), dict) and isinstance(pschema, dict):
                        props[pname] = {**props[pname], **pschema}
                    else:
                        props[pname] = pschema
            elif key == "required":
                req = merged.setdefault("required", [])
                req.extend(r for r in value if r not in req)
            elif key == "description" and "description" in merged:
                continue
            elif key in ("anyOf", "oneOf") and key in merged and merged[key] != value:
                raise GenerationError(f"allOf members that both constrain with `{key}` cannot be merged")
            else:
                merged[key] = value
    return merged


def _union_member(defs: dict[str, Any], members: list[Any]) -> tuple[int, str] | None:
    """The one `allOf` member that is a bare union (`anyOf`/`oneOf` with nothing but
    annotations beside it), as (index, keyword); None when there is none or more than one."""
    found = []
    for i, member in enumerate(members):
        part = _resolve(defs, member)
        if not isinstance(part, dict):
            continue
        for key in ("anyOf", "oneOf"):
            if isinstance(part.get(key), list) and set(part) - {key} <= _QUIET_KEYS | {"$schema", "type"}:
                found.append((i, key))
    return found[0] if len(found) == 1 else None


def _distribute_all_of(defs: dict[str, Any], node: dict[str, Any]) -> bool:
    """`allOf [A, anyOf [B, C], D]` -> `anyOf [allOf [A, B, D], allOf [A, C, D]]` (in place)."""
    members = node["allOf"]
    found = _union_member(defs, members)
    if found is None:
        return False
    at, key = found
    if "anyOf" in node or "oneOf" in node:
        return False
    branches = _resolve(defs, members[at])[key]
    node.pop("allOf")
    node[key] = [
        {"allOf": [copy.deepcopy(m) if i != at else copy.deepcopy(branch) for i, m in enumerate(members)]}
        for branch in branches
    ]
    return True


def _merge_all_of_everywhere(defs: dict[str, Any]) -> None:
    def visit(node: Any) -> Any:
        if isinstance(node, dict):
            for key, sub in list(node.items()):
                node[key] = visit_child(key, sub)
            if isinstance(node.get("allOf"), list) and _distribute_all_of(defs, node):
                return visit(node)
            if isinstance(node.get("allOf"), list):
                members = node.pop("allOf")
                merged = _merge_objects(defs, members)
                for key, value in merged.items():
                    if key == "description" and "description" in node:
                        continue
                    node[key] = value
                visit(node)
        return node

    def visit_child(key: str, sub: Any) -> Any:
        if key == "properties" and isinstance(sub, dict):
            return {k: visit(v) for k, v in sub.items()}
        if key in _MAP and isinstance(sub, dict):
            return {k: visit(v) for k, v in sub.items()}
        if key in _ONE and isinstance(sub, dict):
            return visit(sub)
        if key in (*_LIST, "items") and isinstance(sub, list):
            return [visit(v) for v in sub]
        return sub

    for name in list(defs):
        try:
            defs[name] = visit(defs[name])
        except GenerationError as exc:
            raise GenerationError(exc.message, pointer=join_pointer(DEFS, name)) from None


# -- any JSON value ------------------------------------------------------------------------

_ALL_JSON = {"object", "array", "string", "number", "boolean", "null"}
_QUIET_KEYS = {"description", "title", "$comment"}


def _covered_types(defs: dict[str, Any], name: str, branch: Any) -> set[str]:
    """The JSON types a branch of the union `name` covers completely: a bare ref to a map of
    `name` (object), an array of `name` (array), or plain primitive types."""
    if not isinstance(branch, dict):
        return set()
    if isinstance(branch.get("$ref"), str) and set(branch) <= {"$ref"} | _QUIET_KEYS:
        return {"object"} if _is_map_of(defs.get(ref_name(branch["$ref"])), name) else set()
    kinds = branch.get("type")
    kinds = [kinds] if isinstance(kinds, str) else kinds
    if not isinstance(kinds, list):
        return set()
    if kinds == ["array"]:
        return {"array"} if _is_array_of(branch, name) else set()
    if set(branch) <= {"type"} | _QUIET_KEYS:
        return {"number" if k == "integer" else str(k) for k in kinds} - {"array", "object"}
    return set()


def _is_map_of(target: Any, name: str) -> bool:
    """Is `target` an object def with no properties whose every value is a `name`?"""
    if not isinstance(target, dict):
        return False
    values = target.get("additionalProperties")
    return (
        not target.get("properties")
        and set(target) <= {"type", "additionalProperties", "properties"} | _QUIET_KEYS
        and isinstance(values, dict)
        and values.get("$ref") == REF_PREFIX + name
    )


def _is_array_of(branch: dict[str, Any], name: str) -> bool:
    """Is `branch` a bare array of `name`?"""
    items = branch.get("items")
    return (
        set(branch) <= {"type", "items"} | _QUIET_KEYS
        and isinstance(items, dict)
        and items.get("$ref") == (REF_PREFIX + name)
    )


def _collapse_any_json(defs: dict[str, Any]) -> list[str]:
    """A def that is a union covering every JSON value (object and array of itself, every
    primitive) constrains nothing a JSON parser has not already checked: make it `{}`."""
    found = []
    for name, node in defs.items():
        branches = node.get("anyOf") if isinstance(node, dict) else None
        if not isinstance(branches, list) or set(node) - {"anyOf"} - _QUIET_KEYS:
            continue
        covered: set[str] = set()
        for branch in branches:
            covered |= _covered_types(defs, name, branch)
        if covered >= _ALL_JSON:
            found.append(name)
    for name in found:
        description = defs[name].get("description")
        defs[name] = {"description": description} if description else {}
    return found


# -- inline copies of defs -----------------------------------------------------------------

_ANNOTATIONS = ("description", "title", "$comment", "$schema", "examples")


def _canonical(node: Any) -> Any:
    """A schema without its annotations (descriptions, titles, ...), for comparing shapes.
    Property names and values under data keywords (`const`, `enum`, `default`) are kept."""
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in _ANNOTATIONS:
                continue
            if key in ("const", "enum", "default"):
                out[key] = value
            elif key in ("properties", *_MAP) and isinstance(value, dict):
                out[key] = {k: _canonical(v) for k, v in value.items()}
            else:
                out[key] = _canonical(value)
        return out
    if isinstance(node, list):
        return [_canonical(v) for v in node]
    return node


def canonical_json(node: Any) -> str:
    """`_canonical` as sorted JSON text: two schemas of the same shape give the same text."""
    return json.dumps(_canonical(node), sort_keys=True)


def _copy_key(defs: dict[str, Any], node: dict[str, Any]) -> str:
    """A schema as sorted JSON text, without the annotations of its root only (an inline copy of
    a def may say what it is for, but everything inside it is the def's, descriptions included)
    and without root keywords that constrain nothing: `additionalProperties: {}` (or `true`), and
    `type: object` on a union whose every branch is an object (an `allOf` with an open object,
    such as a JSON-RPC envelope's `params`, leaves both on a copy)."""
    key = {k: v for k, v in node.items() if k not in _ANNOTATIONS}
    if key.get("additionalProperties") in ({}, True):
        del key["additionalProperties"]
    branches = key.get("anyOf", key.get("oneOf"))
    if key.get("type") == "object" and isinstance(branches, list):
        if all(isinstance(b, dict) and _resolve(defs, b).get("type") == "object" for b in branches):
            del key["type"]
    return json.dumps(key, sort_keys=True)


def _is_model_shape(node: Any) -> bool:
    """An object with properties, or a union with such an object among its inline branches."""
    if is_object_schema(node):
        return True
    if isinstance(node, dict) and "$ref" not in node:
        for key in ("anyOf", "oneOf"):
            if isinstance(node.get(key), list) and any(is_object_schema(b) for b in node[key]):
                return True
    return False


def _refer_to_copied_defs(defs: dict[str, Any]) -> None:
    """Replace every inline copy of a def (see the module docstring) with a `$ref` to it."""
    by_shape: dict[str, list[str]] = {}
    for name, node in defs.items():
        if _is_model_shape(node):
            by_shape.setdefault(_copy_key(defs, node), []).append(name)
    if not by_shape:
        return

    def visit(node: Any, owner: str) -> Any:
        if isinstance(node, dict):
            if _is_model_shape(node):
                names = by_shape.get(_copy_key(defs, node), [])
                if len(names) == 1 and names[0] != owner:
                    ref = make_ref(names[0])
                    return {**ref, "description": node["description"]} if "description" in node else ref
            for key in list(node):
                sub = node[key]
                if key in ("properties", *_MAP) and isinstance(sub, dict):
                    node[key] = {k: visit(v, owner) for k, v in sub.items()}
                elif key in (*_ONE, "items") and isinstance(sub, dict):
                    node[key] = visit(sub, owner)
                elif key in _LIST and isinstance(sub, list):
                    node[key] = [visit(v, owner) for v in sub]
        return node

    for name in list(defs):
        node = defs[name]
        if not isinstance(node, dict):
            continue
        for key in list(node):  # the def's own root is never replaced, only what is inside it
            sub = node[key]
            if key in ("properties", *_MAP) and isinstance(sub, dict):
                node[key] = {k: visit(v, name) for k, v in sub.items()}
            elif key in (*_ONE, "items") and isinstance(sub, dict):
                node[key] = visit(sub, name)
            elif key in _LIST and isinstance(sub, list):
                node[key] = [visit(v, name) for v in sub]


# -- ref aliases ---------------------------------------------------------------------------


def _copy_ref_aliases(defs: dict[str, Any]) -> None:
    for name in list(defs):
        node = defs[name]
        if isinstance(node, dict) and "$ref" in node and set(node) <= {"$ref", "description", "title"}:
            target = _resolve(defs, node, frozenset({name}))
            if isinstance(target, dict) and "$ref" not in target:
                replacement = copy.deepcopy(target)
                if "description" in node:
                    replacement["description"] = node["description"]
                defs[name] = replacement


# -- hoisting ------------------------------------------------------------------------------


def _branch_name(branch: Any, index: int, siblings: list[Any]) -> str:
    """A union branch's name: its const tag, its title, or the required property only it has;
    a number only when nothing tells the branches apart."""
    if isinstance(branch, dict):
        required = branch.get("required", [])
        tags = [
            (pname, pschema["const"])
            for pname, pschema in sorted((branch.get("properties") or {}).items())
            if isinstance(pschema, dict) and isinstance(pschema.get("const"), str) and pname in required
        ]
        for pname, tag in tags:  # a tag the siblings do not share names the branch best
            if not any(_const_of(other, pname) == tag for other in siblings if other is not branch):
                return pascal(tag)
        if tags:
            return pascal(tags[0][1])
        if isinstance(branch.get("title"), str):
            return pascal(branch["title"])
        others: set[str] = set()
        for other in siblings:
            if other is not branch and isinstance(other, dict):
                others.update(other.get("required", []))
        own = sorted(set(required) - others)
        if own:
            return "With" + pascal(own[0])
    return f"Option{index + 1}"


def _const_of(node: Any, pname: str) -> Any:
    schema = (node.get("properties") or {}).get(pname) if isinstance(node, dict) else None
    return schema.get("const") if isinstance(schema, dict) else None


def _hoist_inline_objects(norm: Normalized) -> None:
    defs = norm.doc.defs
    taken = set(defs)
    queue = list(defs)
    origin: dict[str, tuple[str, ...]] = {name: (DEFS, name) for name in defs}

    def new_name(base: str) -> str:
        """The path name; on a clash with a def, `Inline` is added (and reported), never a bare number."""
        name = base
        if name in taken:
            name = base + "Inline"
            n = 2
            while name in taken:
                name = f"{base}Inline{n}"
                n += 1
            norm.warnings.append(f"inline object {base} is named {name}: a def already has its path name")
        taken.add(name)
        return name

    def visit(node: Any, owner: str, suffix: str, pointer: tuple[str, ...], at_root: bool) -> Any:
        if not isinstance(node, dict):
            return node
        if not at_root and is_object_schema(node):
            name = new_name(owner + suffix)
            defs[name] = node
            norm.hoisted_from[name] = join_pointer(*pointer)
            origin[name] = pointer
            queue.append(name)
            return make_ref(name)
        for key in list(node):
            sub = node[key]
            if key == "properties" and isinstance(sub, dict):
                node[key] = {k: visit(v, owner, suffix + pascal(k), (*pointer, key, k), False) for k, v in sub.items()}
            elif key in _MAP and isinstance(sub, dict):
                node[key] = {k: visit(v, owner, suffix + "Value", (*pointer, key, k), False) for k, v in sub.items()}
            elif key == "items" and isinstance(sub, dict):
                node[key] = visit(sub, owner, suffix + "Item", (*pointer, key), False)
            elif key == "additionalProperties" and isinstance(sub, dict):
                node[key] = visit(sub, owner, suffix + "Value", (*pointer, key), False)
            elif key in _ONE and isinstance(sub, dict):
                node[key] = visit(sub, owner, suffix + pascal(key), (*pointer, key), False)
            elif key in _LIST and isinstance(sub, list):
                node[key] = [
                    visit(v, owner, suffix + _branch_name(v, i, sub), (*pointer, key, str(i)), False)
                    for i, v in enumerate(sub)
                ]
        return node

    while queue:
        name = queue.pop(0)
        defs[name] = visit(defs[name], name, "", origin[name], True)


# -- require-any-of -----------------------------------------------------------------------


def _lift_require_any_of(norm: Normalized) -> None:
    for name, node in norm.doc.defs.items():
        if not isinstance(node, dict) or not node.get("properties"):
            continue
        for key in ("anyOf", "oneOf"):
            branches = node.get(key)
            if (
                isinstance(branches, list)
                and branches
                and all(isinstance(b, dict) and set(b) == {"required"} for b in branches)
            ):
                norm.require_any_of[name] = [list(b["required"]) for b in branches]
                del node[key]


# -- discriminators -----------------------------------------------------------------------


def _const_tags(defs: dict[str, Any], members: list[Any]) -> tuple[str, dict[str, str]] | None:
    targets = []
    for m in members:
        if not (isinstance(m, dict) and set(m) == {"$ref"}):
            return None
        target = defs.get(ref_name(m["$ref"]))
        if not isinstance(target, dict) or not target.get("properties"):
            return None
        targets.append((ref_name(m["$ref"]), target))
    candidates = set.intersection(*(set(t["properties"]) for _, t in targets))
    for prop in sorted(candidates):
        tags: dict[str, str] = {}
        for name, target in targets:
            schema = target["properties"][prop]
            value = schema.get("const") if isinstance(schema, dict) else None
            if not isinstance(value, str) or prop not in target.get("required", []) or value in tags:
                break
            tags[value] = name
        else:
            return prop, tags
    return None


def _allowed_values(schema: Any) -> list[str] | None:
    """The strings a property schema allows, when it allows a few fixed strings only."""
    if not isinstance(schema, dict):
        return None
    if isinstance(schema.get("const"), str):
        return [schema["const"]]
    values = schema.get("enum")
    if isinstance(values, list) and values and all(isinstance(v, str) for v in values):
        return list(dict.fromkeys(values))
    return None


def _value_split(defs: dict[str, Any], members: list[Any]) -> Split | None:
    """For a union of object defs with no discriminator: the required property, fixed to a few
    strings in every member, that splits the members into the most groups (at least two), as
    value -> [(member, its required keys)] in the union's order."""
    targets = []
    for m in members:
        if not (isinstance(m, dict) and set(m) == {"$ref"}):
            return None
        target = defs.get(ref_name(m["$ref"]))
        if not isinstance(target, dict) or not isinstance(target.get("properties"), dict):
            return None
        if set(target) & {"anyOf", "oneOf", "allOf"}:
            return None
        targets.append((ref_name(m["$ref"]), target))
    if len({name for name, _ in targets}) != len(targets):
        return None
    best: Split | None = None
    best_count = 1
    common = set.intersection(*(set(t.get("required") or []) & set(t["properties"]) for _, t in targets))
    for prop in sorted(common):
        groups: dict[str, list[tuple[str, frozenset[str]]]] = {}
        for name, target in targets:
            values = _allowed_values(target["properties"][prop])
            if values is None:
                break
            for value in values:
                groups.setdefault(value, []).append((name, frozenset(target.get("required") or [])))
        else:
            count = len({tuple(n for n, _ in group) for group in groups.values()})
            if count > best_count:
                best, best_count = (prop, dict(sorted(groups.items()))), count
    return best


def _add_discriminators(norm: Normalized) -> None:
    defs = norm.doc.defs

    def visit(node: Any, def_name: str | None) -> None:
        if isinstance(node, dict):
            for key in ("anyOf", "oneOf"):
                members = node.get(key)
                if isinstance(members, list) and len(members) > 1 and "discriminator" not in node:
                    found = _const_tags(defs, members)
                    if found:
                        prop, tags = found
                        node["discriminator"] = {
                            "propertyName": prop,
                            "mapping": {tag: REF_PREFIX + name for tag, name in tags.items()},
                        }
                        if def_name is not None:
                            norm.discriminators[def_name] = found
                    elif def_name is not None and (split := _value_split(defs, members)):
                        norm.shape_splits[def_name] = split
            for key, sub in node.items():
                if key in ("properties", *_MAP) and isinstance(sub, dict):
                    for v in sub.values():
                        visit(v, None)
                elif isinstance(sub, (dict, list)) and key in (*_ONE, *_LIST):
                    visit(sub, None)
        elif isinstance(node, list):
            for v in node:
                visit(v, None)

    for name, node in defs.items():
        visit(node, name)
