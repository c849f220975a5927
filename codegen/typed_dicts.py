"""Which object defs become `TypedDict`s instead of models, and the rewrite that makes them so.

A pydantic model instance costs four objects per validation (the instance, its `__dict__`, the
fields-set and the unknown-keys dict) and a `TypedDict` costs one plain dict: for the objects that
are maps rather than messages, a `TypedDict` is both the faithful Python type and the cheap one.
The rules are about the schema's shape only, never about names:

- **wire-keyed maps**: an object that declares a key which is not a Python identifier
  (`$schema`, `io.modelcontextprotocol/clientInfo`). Its keys are data a model could only
  mangle into invented attribute names; a `TypedDict` keeps them as written on the wire
  (`_meta` objects, JSON Schema documents).
- **option sets**: an open object whose every property is optional (capabilities, hints,
  preferences): a set of optional entries, read with `.get()`.

Either way the def must be a value only: referenced at least once, and only as a property value,
an array item or a map value; never a method's message, params or result, never a union member,
never carrying a cross-field check (the "at least one of" groups), since a `TypedDict` has no
validator of its own. Every key keeps its type and constraints (strict scalars, literals,
bounds); unknown keys are kept (a closed object refuses them), and dumps write exactly the keys
that were read.

A `TypedDict` holds plain data all the way down. A wire-keyed map whose values include a def that
is a model elsewhere (a `_meta` object carrying an `Implementation`) gets that def as a
**twin**: a `TypedDict` copy of it named `<Def>Dict` (`<Def>Dict2`, ... when the name is taken),
with the same keys, types, constraints and description, used inside the map and inside other
twins only; the def itself stays the model it is everywhere else. A def can have a twin when it
is an object without a cross-field check or a union of its own (`anyOf`, `oneOf`, `allOf`); a map
that reaches a model any other way (through a union or an alias of models, or through another map
or option set that holds one) stays a model.
"""

from __future__ import annotations

import ast
import copy
import inspect
import keyword
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .loader import make_ref, ref_name

# JSON-pointer segments under which a `$ref` is a value position (the def stands for a value)
_VALUE_KEYS = ("properties", "additionalProperties", "items", "patternProperties")
# `Field(...)` keywords that only describe or name a field; the others constrain it and are kept
_DESCRIPTIVE = {"alias", "description", "title", "examples", "default"}


@dataclass(frozen=True)
class TypedDictDef:
    """What the rewrite needs to know of one def."""

    required: frozenset[str]
    nullable: frozenset[str]
    closed: bool


def _nullable(schema: Any) -> bool:
    if not isinstance(schema, dict):
        return False
    kinds = schema.get("type")
    if kinds == "null" or (isinstance(kinds, list) and "null" in kinds):
        return True
    return any(_nullable(b) for key in ("anyOf", "oneOf") for b in schema.get(key) or [])


def _positions(defs: dict[str, Any]) -> dict[str, set[str]]:
    """Def name -> the kinds of place it is referenced from: "value" (a property, item or map
    value) or "other" (a union member, the whole of another def, ...)."""
    found: dict[str, set[str]] = {}

    def visit(node: Any, parent_key: str | None) -> None:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#"):
                found.setdefault(ref_name(ref), set()).add("value" if parent_key in _VALUE_KEYS else "other")
            for key, value in node.items():
                if key in ("properties", "patternProperties") and isinstance(value, dict):
                    for sub in value.values():
                        visit(sub, key)
                elif key not in ("const", "enum", "default", "examples"):
                    visit(value, key)
        elif isinstance(node, list):
            for value in node:
                visit(value, None)  # list members (anyOf, oneOf, allOf, prefixItems) are not value positions

    for node in defs.values():
        visit(node, None)
    return found


@dataclass(frozen=True)
class Choice:
    """What `choose` decided: the defs to emit as `TypedDict`s (twins included), each twinned def's
    twin name, and the defs to emit (the input's, with the twins added and the maps holding them
    referring to them; the input's own dict when there are no twins)."""

    typed_dicts: dict[str, TypedDictDef]
    twins: dict[str, str] = field(default_factory=dict)
    defs: dict[str, Any] = field(default_factory=dict)


def choose(
    defs: dict[str, Any], messages: set[str], validated: set[str], decided: Mapping[str, bool] | None = None
) -> Choice:
    """The defs to emit as `TypedDict`s. `messages` are the defs a method table names (messages,
    params, results); `validated` the defs that carry a cross-field check. `decided` holds defs
    whose kind is already settled elsewhere (def -> is a `TypedDict`): an extension's defs that
    are reused from its core version's module, which defines them one way or the other whatever
    the extension's own schema would say; the rules decide the rest around them (a decided def
    is never given twins: it is imported, not emitted)."""
    decided = decided or {}
    chosen, wire_keyed = _candidates(defs, messages, validated, decided)
    twins: dict[str, str] = {}
    holders: list[str] = []
    taken = set(defs)
    for name in wire_keyed:
        needed = _to_twin(defs, name, chosen, validated)
        if not needed:
            continue  # plain data already, or a map that stays a model
        holders.append(name)
        for model in sorted(needed):
            if model not in twins:
                twins[model] = _free_name(f"{model}Dict", taken)
    if twins:
        defs = _with_twins(defs, twins, holders)
        chosen.update((twin, _typed_dict_def(defs[twin])) for twin in twins.values())
    # Plain data all the way down: a TypedDict holding a model would hand its readers a tree of
    # dicts and models mixed (`to_wire` of the dict leaves the models inside as they are).
    while True:
        mixed = {
            name
            for name in chosen
            if name not in decided and any(_holds_model(defs, ref, chosen) for ref in _refs(defs[name]))
        }
        if not mixed:
            return Choice(chosen, twins, defs)
        for name in mixed:
            del chosen[name]


def _candidates(
    defs: dict[str, Any], messages: set[str], validated: set[str], decided: Mapping[str, bool]
) -> tuple[dict[str, TypedDictDef], list[str]]:
    """The defs the rules make `TypedDict`s before the plain-data check (the decided ones that
    are), and which of them the rules chose as wire-keyed maps (sorted)."""
    positions = _positions(defs)
    chosen: dict[str, TypedDictDef] = {}
    wire_keyed: list[str] = []
    for name, node in sorted(defs.items()):
        if not _is_object(node):
            continue
        if name in decided:
            if decided[name]:
                chosen[name] = _typed_dict_def(node)
            continue
        if name in messages or name in validated or positions.get(name) != {"value"}:
            continue
        if set(node) & _COMBINATORS:
            continue
        if any(not _is_identifier(key) for key in node["properties"]):
            wire_keyed.append(name)
            chosen[name] = _typed_dict_def(node)
        elif node.get("additionalProperties") is not False and not node.get("required"):
            chosen[name] = _typed_dict_def(node)  # an option set
    return chosen, wire_keyed


_COMBINATORS = frozenset({"anyOf", "oneOf", "allOf", "discriminator"})


def _to_twin(
    defs: dict[str, Any], holder: str, chosen: Mapping[str, TypedDictDef], validated: set[str]
) -> set[str] | None:
    """The model defs a wire-keyed map reaches (directly, or through the models it reaches),
    which all need twins for the map to be plain data; None when one of them cannot have a twin,
    or the map reaches a model some other way (through a union or an alias)."""
    needed: set[str] = set()
    queue = [holder]
    while queue:
        for ref in sorted(_refs(defs[queue.pop()])):
            if ref in needed or ref == holder:
                continue
            node = defs.get(ref)
            if ref in chosen or not _is_object(node):
                if not _plain(defs, ref, chosen):
                    return None  # a union or alias of models, or a TypedDict that holds one
                continue
            if ref in validated or set(node or ()) & _COMBINATORS:
                return None
            needed.add(ref)
            queue.append(ref)
    return needed


def _plain(defs: dict[str, Any], name: str, chosen: Mapping[str, TypedDictDef]) -> bool:
    """Is a value of def `name` plain data all the way down: does it reach no def but chosen
    ones, aliases and scalars?"""
    seen: set[str] = set()
    queue = [name]
    while queue:
        current = queue.pop()
        if current in seen:
            continue
        seen.add(current)
        if current not in chosen and _is_object(defs.get(current)):
            return False
        queue.extend(_refs(defs.get(current)))
    return True


def _is_object(node: Any) -> bool:
    return isinstance(node, dict) and isinstance(node.get("properties"), dict) and bool(node["properties"])


def _free_name(name: str, taken: set[str]) -> str:
    """`name`, or `name` with the first free number from 2 when a def already has it."""
    found, n = name, 2
    while found in taken:
        found = f"{name}{n}"
        n += 1
    taken.add(found)
    return found


def _with_twins(defs: dict[str, Any], twins: Mapping[str, str], holders: list[str]) -> dict[str, Any]:
    """`defs` with each twin added (a copy of its def, referring to twins itself) and the holders'
    references to twinned defs pointing at the twins."""

    def retarget(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#") and ref_name(ref) in twins:
                return {**node, **make_ref(twins[ref_name(ref)])}
            return {
                key: value if key in ("const", "enum", "default", "examples") else retarget(value)
                for key, value in node.items()
            }
        if isinstance(node, list):
            return [retarget(value) for value in node]
        return node

    out = dict(defs)
    for name in holders:
        out[name] = retarget(defs[name])
    for model, twin in twins.items():
        node = retarget(copy.deepcopy(defs[model]))
        note = f"The plain-data form of `{model}` (a `TypedDict`), as wire-keyed maps hold it."
        node["description"] = f"{node['description']}\n\n{note}" if node.get("description") else note
        out[twin] = node
    return out


def _typed_dict_def(node: dict[str, Any]) -> TypedDictDef:
    props: dict[str, Any] = node["properties"]
    return TypedDictDef(
        required=frozenset(node.get("required") or []),
        nullable=frozenset(key for key, schema in props.items() if _nullable(schema)),
        closed=node.get("additionalProperties") is False,
    )


def _refs(node: Any) -> set[str]:
    """The defs a schema refers to directly."""
    found: set[str] = set()
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#"):
            found.add(ref_name(ref))
        for key, value in node.items():
            if key not in ("const", "enum", "default", "examples"):
                found |= _refs(value)
    elif isinstance(node, list):
        for value in node:
            found |= _refs(value)
    return found


def _holds_model(
    defs: dict[str, Any], name: str, chosen: dict[str, TypedDictDef], seen: frozenset[str] = frozenset()
) -> bool:
    """Does a value of def `name` hold a model: is it, or does a union or alias it stands for
    reach, an object def that is not chosen?"""
    if name in chosen or name in seen:
        return False
    node = defs.get(name)
    if not isinstance(node, dict):
        return False
    if isinstance(node.get("properties"), dict) and node["properties"]:
        return True
    return any(_holds_model(defs, ref, chosen, seen | {name}) for ref in _refs(node))


def _is_identifier(key: str) -> bool:
    return key.isidentifier() and not keyword.iskeyword(key)


# -- the rewrite ------------------------------------------------------------------------------

NEEDED = {"typing_extensions": ("NotRequired", "TypedDict"), "pydantic": ("ConfigDict", "with_config")}


def convert(code: str, chosen: dict[str, TypedDictDef]) -> str:
    """Rewrite the chosen model classes of datamodel-code-generator's output as `TypedDict`s
    (found by AST; each class keeps its docstring, field docs, key types and constraints)."""
    if not chosen:
        return code
    tree = ast.parse(code)
    lines = code.splitlines(keepends=True)
    replace: dict[int, tuple[int, str]] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name in chosen:
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            replace[start] = (node.end_lineno or node.lineno, _typed_dict(code, node, chosen[node.name]))
    if not replace:
        return code
    have = {(n.module, a.asname or a.name) for n in tree.body if isinstance(n, ast.ImportFrom) for a in n.names}
    imports = "".join(
        f"from {module} import {', '.join(missing)}\n"
        for module, names in NEEDED.items()
        if (missing := [name for name in names if (module, name) not in have])
    )
    return insert_imports(splice_lines(lines, replace), imports)


def splice_lines(lines: list[str], replace: Mapping[int, tuple[int, str]]) -> str:
    """`lines` (kept ends) joined, each range `replace` names (first line number -> (last line
    number, new text); numbered from 1) replaced by its text."""
    out: list[str] = []
    number = 1
    while number <= len(lines):
        if number in replace:
            last, text = replace[number]
            out.append(text)
            number = last + 1
        else:
            out.append(lines[number - 1])
            number += 1
    return "".join(out)


def insert_imports(code: str, imports: str) -> str:
    """`imports` (whole lines) after the module's leading imports: its docstring and the imports
    it starts with (a header's among them) stay first."""
    if not imports:
        return code
    tree = ast.parse(code)
    after = 0
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            after = node.end_lineno or node.lineno
        elif not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and node is tree.body[0]):
            break
    lines = code.splitlines(keepends=True)
    return "".join([*lines[:after], imports, *lines[after:]])


def _without_none(annotation: ast.expr) -> ast.expr:
    """`X | Y | None` -> `X | Y` (an absent key is not a null)."""
    members: list[ast.expr] = []

    def flatten(node: ast.expr) -> None:
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            flatten(node.left)
            flatten(node.right)
        else:
            members.append(node)

    flatten(annotation)
    kept = [m for m in members if not (isinstance(m, ast.Constant) and m.value is None)]
    if not kept or len(kept) == len(members):
        return annotation
    result = kept[0]
    for member in kept[1:]:
        result = ast.BinOp(left=result, op=ast.BitOr(), right=member)
    return result


def subscript_args(expr: ast.expr, name: str) -> list[ast.expr] | None:
    """The arguments of `expr` when it is `name[a, b, ...]` (a subscript of that plain name with
    more than one argument), else None."""
    if (
        isinstance(expr, ast.Subscript)
        and isinstance(expr.value, ast.Name)
        and expr.value.id == name
        and isinstance(expr.slice, ast.Tuple)
    ):
        return expr.slice.elts
    return None


def _key_and_type(field: ast.AnnAssign, info: TypedDictDef) -> tuple[str, str]:
    """The wire key of a model field and its `TypedDict` value type."""
    assert isinstance(field.target, ast.Name)
    key = field.target.id
    annotation = field.annotation
    kept: list[ast.keyword] = []
    parts = subscript_args(annotation, "Annotated")
    if parts is not None:
        inner, *extras = parts
        for extra in extras:
            if isinstance(extra, ast.Call) and isinstance(extra.func, ast.Name) and extra.func.id == "Field":
                for kw in extra.keywords:
                    if kw.arg == "alias" and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str):
                        key = kw.value.value
                    elif kw.arg not in _DESCRIPTIVE:
                        kept.append(kw)
        annotation = inner
    if key not in info.nullable:
        annotation = _without_none(annotation)
    text = ast.unparse(annotation)
    if kept:
        text = f"Annotated[{text}, Field({', '.join(ast.unparse(k) for k in kept)})]"
    return key, text if key in info.required else f"NotRequired[{text}]"


def _typed_dict(code: str, node: ast.ClassDef, info: TypedDictDef) -> str:
    doc = ast.get_docstring(node, clean=False)
    entries: list[tuple[str, str, str | None]] = []  # key, type, the field's docstring source
    body = node.body
    for i, stmt in enumerate(body):
        if not isinstance(stmt, ast.AnnAssign) or not isinstance(stmt.target, ast.Name):
            continue
        if stmt.target.id.startswith("__"):
            continue  # `__pydantic_extra__`: the type of unknown keys, which a TypedDict keeps as they are
        key, kind = _key_and_type(stmt, info)
        after = body[i + 1] if i + 1 < len(body) else None
        field_doc = None
        if isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant) and isinstance(after.value.value, str):
            field_doc = ast.get_source_segment(code, after)
        entries.append((key, kind, field_doc))
    config = f'with_config(ConfigDict(extra="{"forbid" if info.closed else "allow"}"))'
    quoted_doc = f'    """{doc}"""\n' if doc else ""
    if all(_is_identifier(key) for key, _, _ in entries):
        lines = [f"@{config}\n", f"class {node.name}(TypedDict):\n", quoted_doc]
        for key, kind, field_doc in entries:
            lines.append(f"    {key}: {kind}\n")
            if field_doc:
                lines.append(f"    {field_doc}\n")
        if not entries and not doc:
            lines.append("    pass\n")
        return "".join(lines)
    items = "".join(f"    {key!r}: {kind},\n" for key, kind, _ in entries)
    text = f"{node.name} = TypedDict(\n    {node.name!r},\n    {{\n{items}    }},\n)\n"
    if doc:
        text += f'"""\n{inspect.cleandoc(doc)}\n"""\n'
    return text + f"{config}({node.name})\n"
