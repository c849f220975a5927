"""The fast output-schema check agrees with jsonschema, and falls back to it where drafts differ."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcpgen.runtime.protocol.schema_check import SchemaCheck

SCHEMAS: list[dict[str, Any]] = [
    {"type": "object", "properties": {"result": {"type": "integer"}}, "required": ["result"]},
    {
        "type": "object",
        "properties": {"area": {"$ref": "#/$defs/Area"}, "tags": {"type": "array", "items": {"type": "string"}}},
        "$defs": {
            "Area": {"type": "object", "properties": {"m2": {"type": "number", "minimum": 0}}, "required": ["m2"]}
        },
        "additionalProperties": False,
    },
    {
        "type": "object",
        "properties": {"kind": {"enum": ["a", "b"]}, "n": {"anyOf": [{"type": "null"}, {"type": "integer"}]}},
    },
    {"type": "object", "properties": {"when": {"type": "string", "format": "date-time"}}},  # formats are annotations
    # 2020-12 only: not compiled, the full validator decides
    {"type": "object", "properties": {"pair": {"type": "array", "prefixItems": [{"type": "integer"}], "items": False}}},
    {"type": "object", "dependentRequired": {"a": ["b"]}},
]

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | st.floats(-5, 5, allow_nan=False)
    | st.sampled_from(["a", "b", "x"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["result", "area", "m2", "tags", "kind", "n", "when", "pair", "a", "b"]), inner, max_size=4
        )
    ),
    max_leaves=10,
)


@settings(max_examples=300, deadline=None)
@given(index=st.integers(0, len(SCHEMAS) - 1), value=json_values)
def test_the_check_agrees_with_jsonschema(index: int, value: Any) -> None:
    schema = SCHEMAS[index]
    expected = jsonschema.validators.validator_for(schema)(schema).is_valid(value)
    assert (SchemaCheck(schema).problem(value) is None) == expected


def test_common_schemas_are_compiled_and_draft_specific_ones_are_not() -> None:
    assert SchemaCheck(SCHEMAS[0])._fast is not None
    assert SchemaCheck(SCHEMAS[1])._fast is not None
    assert SchemaCheck(SCHEMAS[4])._fast is None
    assert SchemaCheck(SCHEMAS[5])._fast is None


@pytest.mark.parametrize(("value", "where"), [({"result": "3"}, "result"), ({}, "(root)")])
def test_problems_name_where_the_value_breaks_the_schema(value: Any, where: str) -> None:
    problem = SchemaCheck(SCHEMAS[0]).problem(value)
    assert problem is not None and problem.startswith(where)


def test_defaults_in_a_schema_never_change_the_value() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer", "default": 5}}}
    value: dict[str, Any] = {}
    assert SchemaCheck(schema).problem(value) is None
    assert value == {}


def test_defects_name_what_makes_a_schema_unusable() -> None:
    from mcpgen.runtime.protocol.schema_check import defects

    nested_defs = {
        "type": "object",
        "properties": {"result": {"$defs": {"Item": {"type": "object"}}, "items": {"$ref": "#/$defs/Item"}}},
    }
    assert defects(nested_defs) == ["$ref '#/$defs/Item' points at nothing in the schema"]
    hoisted = {
        "type": "object",
        "properties": {"result": {"items": {"$ref": "#/$defs/Item"}}},
        "$defs": {"Item": {"type": "object"}},
    }
    assert defects(hoisted) == []
    assert defects({"properties": {"a": {"$ref": "https://example.com/s.json"}}}) == [
        "$ref 'https://example.com/s.json' points outside the schema"
    ]
    assert defects({"type": 5})[0].startswith("not a valid JSON Schema")
    # data is not schema: a `$ref` inside a `const` or a property named `default` is looked at rightly
    assert defects({"const": {"$ref": "#/nowhere"}, "properties": {"default": {"$ref": "#/properties"}}}) == []


def test_an_unusable_schema_raises_our_own_error_not_the_validators() -> None:
    from mcpgen.runtime.protocol.schema_check import InvalidSchema

    check = SchemaCheck({"type": "object", "properties": {"x": {"$ref": "#/$defs/Gone"}}})
    with pytest.raises(InvalidSchema, match="Gone"):
        check.problem({"x": 1})
    with pytest.raises(InvalidSchema, match="not a valid JSON Schema"):
        SchemaCheck({"type": "object", "properties": {"x": {"type": 5}}}).problem({"x": 1})
