"""Checking a JSON value against a JSON Schema (a tool's `outputSchema`), fast on the common path.

Every tool call's structured content is checked, so the check is on a hot path. `jsonschema` is
the authority (every draft, exact messages) but interprets the schema on each call; when a
schema uses only keywords that mean the same in draft-07 and 2020-12 (types, properties,
required, items as one schema, enums, bounds, combinators, local `$ref`s...), `fastjsonschema`
compiles it to Python once and answers in about a twentieth of the time. A value the fast check
refuses is checked again by `jsonschema`, which gives the message (and has the last word).

A schema that cannot be used (not a JSON Schema, or a `$ref` that points at nothing) raises
`InvalidSchema` from `problem`, whatever the validator library raised: callers turn it into an
error of their own. `defects(schema)` says beforehand why a schema is not valid and self-contained
(what a server checks of the schemas it advertises).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cached_property
from typing import Any
from urllib.parse import unquote

# Keywords whose meaning draft-07 and 2020-12 share, and those of them that hold subschemas.
_COMMON = frozenset(
    {
        "type", "enum", "const", "properties", "required", "additionalProperties", "patternProperties",
        "propertyNames", "minProperties", "maxProperties", "items", "minItems", "maxItems", "uniqueItems",
        "contains", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength",
        "maxLength", "pattern", "format", "anyOf", "oneOf", "allOf", "not", "if", "then", "else", "$ref",
        "$defs", "definitions", "$schema", "$id", "$comment", "title", "description", "default", "examples",
        "readOnly", "writeOnly", "deprecated", "contentMediaType", "contentEncoding",
    }
)  # fmt: skip
_ONE = ("additionalProperties", "propertyNames", "items", "contains", "not", "if", "then", "else")
_MAP = ("properties", "patternProperties", "$defs", "definitions")
_LIST = ("anyOf", "oneOf", "allOf")
_DRAFTS = ("draft-07", "draft/2019-09", "draft/2020-12")


def _common(schema: object) -> bool:
    """Does `schema` (and every subschema) use only the keywords both drafts read alike?"""
    if isinstance(schema, bool):
        return True
    if not isinstance(schema, Mapping) or not set(schema) <= _COMMON:
        return False
    if "$schema" in schema and not any(d in str(schema["$schema"]) for d in _DRAFTS):
        return False
    if "$ref" in schema and not str(schema["$ref"]).startswith("#"):
        return False
    children: list[object] = [schema[k] for k in _ONE if k in schema]
    children += [v for k in _MAP if isinstance(schema.get(k), Mapping) for v in schema[k].values()]
    children += [v for k in _LIST if isinstance(schema.get(k), list) for v in schema[k]]
    if any(isinstance(schema.get(k), list) for k in ("items",)):
        return False  # tuple `items` changed meaning in 2020-12
    return all(_common(child) for child in children)


class InvalidSchema(ValueError):
    """The schema itself is unusable: not a JSON Schema, or a reference that resolves to nothing."""


def _pointer(root: object, fragment: str) -> bool:
    """Does the JSON pointer `fragment` (after `#`) point at something in `root`?"""
    node = root
    for raw in fragment.split("/")[1:]:
        token = unquote(raw).replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return False
    return True


_DATA = frozenset({"const", "enum", "default", "examples"})  # keywords whose values are data, not schemas
_NAMED = frozenset({*_MAP, "dependentSchemas"})  # keywords whose values map names to schemas


def _refs(schema: object) -> list[str]:
    """Every `$ref` in `schema` (not in data: `const`, `enum`, `default`, `examples`)."""
    found: list[str] = []
    stack: list[tuple[object, bool]] = [(schema, False)]  # (node, is it a name -> schema map)
    while stack:
        node, names = stack.pop()
        if isinstance(node, Mapping):
            if not names and isinstance(node.get("$ref"), str):
                found.append(node["$ref"])
            for key, value in node.items():
                if names or key not in _DATA:
                    stack.append((value, not names and key in _NAMED))
        elif isinstance(node, list):
            stack.extend((item, False) for item in node)
    return found


def defects(schema: Mapping[str, Any] | bool) -> list[str]:
    """Why `schema` is not a valid, self-contained JSON Schema (empty when it is): what its
    meta-schema refuses, and each `$ref` that is not a JSON pointer into the schema itself or
    points at nothing there."""
    import jsonschema

    found: list[str] = []
    document: Any = schema  # a mapping or a boolean, both JSON Schemas (the stubs name dicts only)
    try:
        jsonschema.validators.validator_for(document).check_schema(document)
    except jsonschema.SchemaError as exc:
        found.append(f"not a valid JSON Schema: {exc.message}")
    for ref in _refs(schema):
        if ref != "#" and not ref.startswith("#/"):
            found.append(f"$ref {ref!r} points outside the schema")
        elif not _pointer(schema, ref[1:]):
            found.append(f"$ref {ref!r} points at nothing in the schema")
    return found


class SchemaCheck:
    """One schema, compiled once; `problem(value)` is None when the value fits."""

    def __init__(self, schema: Mapping[str, Any] | bool) -> None:
        self.schema = schema
        self._fast: Callable[[Any], Any] | None = None
        if _common(schema):
            import fastjsonschema

            try:
                body = {k: v for k, v in schema.items() if k != "$schema"} if isinstance(schema, Mapping) else schema
                self._fast = fastjsonschema.compile(body, use_default=False, use_formats=False)
            except Exception:  # a schema the compiler cannot take: the full validator reads it
                self._fast = None

    @cached_property
    def _full(self) -> Any:
        import jsonschema

        document: Any = self.schema  # a mapping or a boolean (the stubs name dicts only)
        validator = jsonschema.validators.validator_for(document)
        try:
            validator.check_schema(document)
        except jsonschema.SchemaError as exc:
            raise InvalidSchema(f"not a valid JSON Schema: {exc.message}") from None
        return validator(document)

    def problem(self, value: Any) -> str | None:
        """The first way `value` breaks the schema, or None if it fits (`InvalidSchema` when the
        schema cannot be used)."""
        if self._fast is not None:
            try:
                self._fast(value)
                return None
            except Exception:  # refused (or could not decide): the full validator has the last word
                pass
        try:
            problems = sorted(self._full.iter_errors(value), key=lambda e: list(e.path))
        except InvalidSchema:
            raise
        except Exception as exc:  # an unresolvable $ref, an unknown type...: the schema's fault, not the value's
            raise InvalidSchema(f"the schema cannot be used: {type(exc).__name__}: {exc}"[:500]) from None
        if not problems:
            return None
        return f"{'/'.join(str(p) for p in problems[0].path) or '(root)'}: {problems[0].message}"
