"""`x-mcp-header` annotations as the HTTP client reads them: the validity rules, and the headers a call gets."""

from __future__ import annotations

from typing import Any

import pytest
from mcpgen.runtime.client.http.tool_headers import ToolHeaders, header_paths


def schema(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties}


def test_valid_annotations_give_their_paths() -> None:
    found = header_paths(
        schema(
            region={"type": "string", "x-mcp-header": "Region"},
            n={"type": "integer", "x-mcp-header": "N"},
            flag={"type": ["boolean", "null"], "x-mcp-header": "Flag"},
            nested={"type": "object", "properties": {"deep": {"type": "string", "x-mcp-header": "Deep"}}},
            plain={"type": "string"},
            with_default={"type": "object", "default": {"x-mcp-header": "NotASchema"}},
        )
    )
    assert found == {"Region": ("region",), "N": ("n",), "Flag": ("flag",), "Deep": ("nested", "deep")}


@pytest.mark.parametrize(
    ("prop", "reason"),
    [
        ({"type": "string", "x-mcp-header": ""}, "not a valid header name"),
        ({"type": "string", "x-mcp-header": "My Region"}, "not a valid header name"),
        ({"type": "string", "x-mcp-header": "Region:1"}, "not a valid header name"),
        ({"type": "string", "x-mcp-header": "Région"}, "not a valid header name"),
        ({"type": "string", "x-mcp-header": "Region\t1"}, "not a valid header name"),
        ({"type": "string", "x-mcp-header": 7}, "not a valid header name"),
        ({"type": "number", "x-mcp-header": "N"}, "not a primitive"),
        ({"type": "object", "x-mcp-header": "O"}, "not a primitive"),
        ({"type": "array", "items": {"type": "string"}, "x-mcp-header": "A"}, "not a primitive"),
        ({"type": "null", "x-mcp-header": "Nil"}, "not a primitive"),
        ({"x-mcp-header": "Untyped"}, "not a primitive"),
        ({"type": "array", "items": {"type": "string", "x-mcp-header": "I"}}, "not on a property"),
        ({"anyOf": [{"type": "string", "x-mcp-header": "U"}]}, "not on a property"),
        ({"$ref": "#/$defs/x", "then": {"type": "string", "x-mcp-header": "T"}}, "not on a property"),
    ],
)
def test_invalid_annotations_are_refused(prop: dict[str, Any], reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        header_paths(schema(p=prop))


def test_names_must_be_unique_whatever_their_case() -> None:
    with pytest.raises(ValueError, match="repeats"):
        header_paths(schema(a={"type": "string", "x-mcp-header": "Id"}, b={"type": "string", "x-mcp-header": "ID"}))


def test_an_annotation_at_the_root_or_under_defs_is_refused() -> None:
    with pytest.raises(ValueError, match="schema root"):
        header_paths({"type": "string", "x-mcp-header": "Root"})
    with pytest.raises(ValueError, match="not on a property"):
        header_paths({"type": "object", "$defs": {"d": {"type": "string", "x-mcp-header": "D"}}})


def test_learning_drops_invalid_tools_and_headers_follow_the_arguments() -> None:
    learned = ToolHeaders()
    result = {
        "tools": [
            {
                "name": "ok",
                "inputSchema": schema(
                    r={"type": "string", "x-mcp-header": "R"}, i={"type": "integer", "x-mcp-header": "I"}
                ),
            },
            {"name": "bad", "inputSchema": schema(r={"type": "number", "x-mcp-header": "R"})},
            {"name": "plain", "inputSchema": schema()},
        ]
    }
    assert learned.learn(result) is True
    assert [t["name"] for t in result["tools"]] == ["ok", "plain"]
    assert learned.headers({"name": "ok", "arguments": {"r": "=?base64?x?=", "i": 0}}) == {
        "Mcp-Param-R": "=?base64?PT9iYXNlNjQ/eD89?=",
        "Mcp-Param-I": "0",
    }
    assert learned.headers({"name": "ok", "arguments": {"r": None}}) == {}
    assert learned.headers({"name": "ok"}) == {}
    assert learned.headers({"name": "plain", "arguments": {"r": "x"}}) == {}
    assert learned.headers({"name": "unknown", "arguments": {"r": "x"}}) == {}
    assert learned.learn({"tools": [{"name": "ok", "inputSchema": schema()}]}) is False
    assert learned.headers({"name": "ok", "arguments": {"r": "x"}}) == {}, "a new listing replaces what was learned"
