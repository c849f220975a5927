"""A hypothesis strategy for instances of a JSON Schema (the keywords MCP schemas use).

hypothesis-jsonschema does not work with current hypothesis releases, so the differential tests
use this small generator: `type`, `properties`/`required`, `additionalProperties`, `items`,
`anyOf`/`oneOf`/`allOf`, `const`, `enum`, `$ref` (recursion bounded by depth), and numeric and
length bounds. It aims at variety, not exactness: callers keep only what `jsonschema` accepts.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

MAX_DEPTH = 4

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**31), 2**31),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
)
any_json = st.recursive(
    json_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=6,
)
key_text = st.text(alphabet=st.characters(min_codepoint=97, max_codepoint=122), min_size=1, max_size=8)


def from_schema(schema: Any, defs: dict[str, Any], depth: int = 0) -> st.SearchStrategy[Any]:
    if schema is True or schema == {} or not isinstance(schema, dict):
        return any_json if depth < MAX_DEPTH else json_scalars
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[1]
        return st.deferred(lambda: from_schema(defs[name], defs, depth + 1))
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            base = {k: v for k, v in schema.items() if k not in (key, "description")}
            branches = [
                from_schema({**base, **b} if isinstance(b, dict) and base.get("properties") else b, defs, depth)
                for b in schema[key]
            ]
            return st.one_of(branches)
    if isinstance(schema.get("allOf"), list):
        merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
        for member in schema["allOf"]:
            part = defs[member["$ref"].rsplit("/", 1)[1]] if isinstance(member, dict) and "$ref" in member else member
            for k, v in part.items():
                if k == "properties":
                    merged.setdefault("properties", {})
                    merged["properties"] = {**merged["properties"], **v}
                elif k == "required":
                    merged["required"] = sorted(set(merged.get("required", [])) | set(v))
                else:
                    merged[k] = v
        return from_schema(merged, defs, depth)
    kinds = schema.get("type")
    if kinds is None:
        kinds = "object" if "properties" in schema else None
    if isinstance(kinds, list):
        return st.one_of([from_schema({**schema, "type": k}, defs, depth) for k in kinds])
    if kinds == "string":
        return st.text(
            min_size=schema.get("minLength", 0), max_size=max(schema.get("minLength", 0), schema.get("maxLength", 12))
        )
    if kinds == "integer":
        return st.integers(schema.get("minimum", -(2**31)), schema.get("maximum", 2**31))
    if kinds == "number":
        lo, hi = schema.get("minimum"), schema.get("maximum")
        return st.one_of(
            st.integers(int(lo) if lo is not None else -1000, int(hi) if hi is not None else 1000),
            st.floats(lo, hi, allow_nan=False, allow_infinity=False),
        )
    if kinds == "boolean":
        return st.booleans()
    if kinds == "null":
        return st.none()
    if kinds == "array":
        items = schema.get("items", {})
        size = 0 if depth >= MAX_DEPTH else min(schema.get("maxItems", 3), 3)
        return st.lists(
            from_schema(items, defs, depth + 1), min_size=min(schema.get("minItems", 0), size), max_size=size
        )
    if kinds == "object":
        return _object(schema, defs, depth)
    return any_json


def _object(schema: dict[str, Any], defs: dict[str, Any], depth: int) -> st.SearchStrategy[Any]:
    props: dict[str, Any] = schema.get("properties", {})
    required = [k for k in schema.get("required", []) if k in props]
    optional = [k for k in props if k not in required]
    extra = schema.get("additionalProperties")

    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key in required:
            out[key] = draw(from_schema(props[key], defs, depth + 1))
        if depth < MAX_DEPTH:
            for key in optional:
                if draw(st.booleans()):
                    out[key] = draw(from_schema(props[key], defs, depth + 1))
            if isinstance(extra, dict) and extra:
                for key in draw(st.lists(key_text, max_size=2, unique=True)):
                    if key not in props:
                        out[key] = draw(from_schema(extra, defs, depth + 1))
            elif (extra is None or extra is True or extra == {}) and draw(st.integers(0, 4)) == 0:
                # now and then, a key the schema does not name
                key = draw(key_text)
                if key not in props:
                    out["x-" + key] = draw(json_scalars)
        return out

    return build()
