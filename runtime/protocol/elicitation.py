"""Elicitation schemas and answers: what a form may ask, and checking what the user gave back.

A requested schema is a flat object of primitive fields (string, number, integer, boolean, and
multi-select arrays of string enums). `apply_elicitation` checks accepted content against it
(types, enums, lengths, ranges; NaN and infinities are not numbers a form can hold), then fills
the defaults the schema gives (SEP-1034).
"""

from __future__ import annotations

import copy
import functools
import math
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

PRIMITIVE_TYPES = ("string", "number", "integer", "boolean")


def schema_of(schema: Mapping[str, Any] | type[BaseModel]) -> dict[str, Any]:
    """A requested schema from a mapping or a pydantic model, checked."""
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return copy.deepcopy(_model_schema(schema))
    requested = dict(schema)
    check_elicitation_schema(requested)
    return requested


@functools.lru_cache(maxsize=256)
def _model_schema(model: type[BaseModel]) -> dict[str, Any]:
    """A pydantic model as a flat elicitation schema (built once per model: it is not cheap)."""
    raw = model.model_json_schema()
    properties = {}
    for name, prop in raw.get("properties", {}).items():
        prop = {k: v for k, v in prop.items() if k != "title" or isinstance(v, str)}
        if "anyOf" in prop:  # `X | None` -> X
            options = [o for o in prop.pop("anyOf") if o.get("type") != "null"]
            if len(options) == 1:
                prop.update(options[0])
        if prop.get("default", "") is None:
            prop.pop("default")
        properties[name] = prop
    out: dict[str, Any] = {"type": "object", "properties": properties}
    if raw.get("required"):
        out["required"] = list(raw["required"])
    check_elicitation_schema(out)
    return out


def check_elicitation_schema(schema: Mapping[str, Any]) -> None:
    """A requested schema is a flat object of primitive fields; `enum` only on strings;
    legacy `enumNames` pairs one to one with `enum`. Raises ValueError otherwise."""
    if schema.get("type") != "object":
        raise ValueError("an elicitation schema is an object schema (type: object)")
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        raise ValueError("an elicitation schema needs `properties`")
    for name, prop in properties.items():
        _check_field(name, prop)
    required = schema.get("required", [])
    unknown = [r for r in required if r not in properties]
    if unknown:
        raise ValueError(f"required fields {unknown} are not in properties")


def _check_field(name: str, prop: object) -> None:
    if not isinstance(prop, Mapping):
        raise ValueError(f"field {name!r}: not a schema")
    kind = prop.get("type")
    if kind == "array":
        items = prop.get("items")
        if not isinstance(items, Mapping) or not (
            (items.get("type") == "string" and "enum" in items) or "anyOf" in items
        ):
            raise ValueError(f"field {name!r}: arrays are only multi-select enums of strings")
        return
    if kind not in PRIMITIVE_TYPES:
        raise ValueError(f"field {name!r}: type {kind!r} is not a primitive (string, number, integer, boolean)")
    if "properties" in prop or "items" in prop:
        raise ValueError(f"field {name!r}: nested objects are not allowed")
    if "enum" in prop:
        if kind != "string":
            raise ValueError(f"field {name!r}: enum is only allowed on strings")
        names = prop.get("enumNames")
        if names is not None and (not isinstance(names, list) or len(names) != len(prop["enum"])):
            raise ValueError(f"field {name!r}: enumNames must match enum one to one")
    if "oneOf" in prop and kind != "string":
        raise ValueError(f"field {name!r}: titled options are only allowed on strings")


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _type_ok(kind: object, value: object) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "integer":
        return _is_number(value) and float(value).is_integer()  # type: ignore[arg-type]
    if kind == "number":
        return _is_number(value)
    if kind == "array":
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    return True


def _allowed_values(prop: Mapping[str, Any]) -> list[Any] | None:
    if "enum" in prop:
        return list(prop["enum"])
    if "oneOf" in prop:
        return [o.get("const") for o in prop["oneOf"] if isinstance(o, Mapping)]
    items = prop.get("items")
    if isinstance(items, Mapping):
        if "enum" in items:
            return list(items["enum"])
        if "anyOf" in items:
            return [o.get("const") for o in items["anyOf"] if isinstance(o, Mapping)]
    return None


def _field_problems(name: str, prop: Mapping[str, Any], value: Any) -> list[str]:
    kind = prop.get("type")
    if not _type_ok(kind, value):
        return [f"{name}: expected {kind}, got {type(value).__name__}"]
    problems = []
    allowed = _allowed_values(prop)
    values = value if isinstance(value, list) else [value]
    if allowed is not None and any(v not in allowed for v in values):
        problems.append(f"{name}: {value!r} is not one of {allowed}")
    if kind == "string" and not prop.get("minLength", 0) <= len(value) <= prop.get("maxLength", len(value)):
        problems.append(f"{name}: length out of range")
    if kind in ("number", "integer") and (
        ("minimum" in prop and value < prop["minimum"]) or ("maximum" in prop and value > prop["maximum"])
    ):
        problems.append(f"{name}: {value} out of range")
    if kind == "array" and not prop.get("minItems", 0) <= len(value) <= prop.get("maxItems", len(value)):
        problems.append(f"{name}: wrong number of items")
    return problems


def apply_elicitation(schema: Mapping[str, Any], content: Mapping[str, Any] | None) -> dict[str, Any]:
    """Validate accepted content against the requested schema, then fill defaults (SEP-1034).

    Validation comes first, so a required field the user left empty is refused even when the
    schema gives it a default. Raises ValueError with what is wrong.
    """
    content = dict(content or {})
    properties: Mapping[str, Any] = schema.get("properties") or {}
    problems = [f"{name}: required" for name in schema.get("required", []) if content.get(name) in (None, "")]
    for name, value in content.items():
        prop = properties.get(name)
        if isinstance(prop, Mapping):  # unknown keys are kept; the schema is open
            problems.extend(_field_problems(name, prop, value))
    if problems:
        raise ValueError("; ".join(problems))
    for name, prop in properties.items():
        if content.get(name) in (None, "") and isinstance(prop, Mapping) and "default" in prop:
            content[name] = prop["default"]
    return content
