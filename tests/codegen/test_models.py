"""Behaviour of the generated models that the schema alone gets wrong, or that users rely on."""

from __future__ import annotations

from typing import Any

import pytest
from mcpgen.generated.v2025_11_25 import methods as methods25
from mcpgen.generated.v2025_11_25 import models as m25
from mcpgen.generated.v2026_07_28 import methods as methods26
from mcpgen.generated.v2026_07_28 import models as m26
from pydantic import TypeAdapter, ValidationError

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


# -- results the schema alone wrongly accepts ----------------------------------------------


def test_complete_result_is_not_an_input_required_result() -> None:
    data = {"resultType": "complete", "content": []}
    with pytest.raises(ValidationError):
        m26.InputRequiredResult.model_validate(data)
    assert m26.CallToolResult.model_validate(data).content == []


def test_call_tool_result_refuses_input_required_tag() -> None:
    with pytest.raises(ValidationError, match="complete"):
        m26.CallToolResult.model_validate({"resultType": "input_required", "content": []})


def test_input_required_result_needs_requests_or_state() -> None:
    with pytest.raises(ValidationError, match="at least one of `inputRequests` or `requestState`"):
        m26.InputRequiredResult.model_validate({"resultType": "input_required"})
    assert m26.InputRequiredResult.model_validate({"resultType": "input_required", "requestState": "s"}).request_state
    ok = m26.InputRequiredResult.model_validate(
        {"resultType": "input_required", "inputRequests": {"r": {"method": "roots/list"}}}
    )
    assert ok.input_requests is not None


def test_input_required_result_constructed_in_python_is_checked_too() -> None:
    with pytest.raises(ValidationError):
        m26.InputRequiredResult(result_type="input_required")


@pytest.mark.parametrize("method", ["tools/call", "prompts/get", "resources/read"])
def test_mrtr_results_dispatch_on_result_type(method: str) -> None:
    spec = methods26.METHODS[method]
    complete_model = next(model for tag, model in spec.result_tags if tag == "complete")
    required = {"resultType": "input_required", "requestState": "opaque"}
    assert isinstance(spec.parse_result(required), m26.InputRequiredResult)
    samples: dict[str, dict[str, Any]] = {
        "tools/call": {"content": []},
        "prompts/get": {"messages": []},
        "resources/read": {"contents": []},
    }
    absent = samples[method]
    assert isinstance(spec.parse_result(absent), complete_model), "absent resultType counts as complete"
    assert isinstance(spec.parse_result({**absent, "resultType": "complete"}), complete_model)


@pytest.mark.parametrize("tag", ["task", "", "COMPLETE", 3, None])
def test_unknown_result_type_is_a_validation_error(tag: object) -> None:
    with pytest.raises(ValidationError):
        methods26.METHODS["tools/call"].parse_result({"resultType": tag, "content": []})


def test_result_type_discriminator_also_accepts_model_instances() -> None:
    spec = methods26.METHODS["tools/call"]
    result = m26.CallToolResult(content=[])
    assert spec.parse_result(result.model_dump(by_alias=True)) == result


# -- requests: the modern era requires `_meta` -----------------------------------------


def test_modern_request_without_meta_is_rejected() -> None:
    with pytest.raises(ValidationError, match="_meta"):
        m26.CallToolRequestParams.model_validate({"name": "echo"})
    with pytest.raises(ValidationError, match="params"):
        m26.ListToolsRequest.model_validate({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    with pytest.raises(ValidationError, match="protocolVersion"):
        m26.CallToolRequestParams.model_validate(
            {"name": "echo", "_meta": {"io.modelcontextprotocol/clientCapabilities": {}}}
        )


def test_legacy_request_without_meta_is_fine() -> None:
    assert m25.CallToolRequestParams.model_validate({"name": "echo"}).meta is None
    assert m25.ListToolsRequest.model_validate({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).params is None


def test_modern_params_required_for_every_request() -> None:
    for spec in methods26.METHODS.values():
        if spec.kind.value == "request":
            assert spec.params_required, spec.method
            with pytest.raises(ValidationError):
                spec.parse_params(None)


# -- numbers, nulls and JSON values after the schema fixes --------------------------------


def test_json_values_accept_floats_and_null() -> None:
    raw = {"experimental": {"x": {"ratio": 1.5, "none": None, "n": [1, 2.5]}}}
    assert TypeAdapter(m26.ClientCapabilities).validate_python(raw) == raw


@pytest.mark.parametrize("models", [m25, m26], ids=["2025-11-25", "2026-07-28"])
def test_elicit_answers_accept_fractions_and_keep_integers(models: Any) -> None:
    data = {"action": "accept", "content": {"age": 30, "height": 1.82, "ok": True, "tags": ["a"], "name": "x"}}
    result = models.ElicitResult.model_validate_json(__import__("json").dumps(data))
    assert result.model_dump(mode="json", exclude_unset=True) == data
    assert isinstance(result.content["age"], int)
    assert isinstance(result.content["ok"], bool)


def test_no_silent_coercion() -> None:
    with pytest.raises(ValidationError):
        m26.CreateMessageRequestParams.model_validate_json('{"messages": [], "maxTokens": "100"}')
    with pytest.raises(ValidationError):
        m26.Implementation.model_validate({"name": 3, "version": "1"})
    with pytest.raises(ValidationError):
        TypeAdapter(m26.ToolAnnotations).validate_python({"readOnlyHint": "yes"})
    with pytest.raises(ValidationError):
        TypeAdapter(m26.Annotations).validate_python({"priority": 1.5})  # constraints hold in a TypedDict too
    with pytest.raises(ValidationError):
        m26.Tool.model_validate({"name": "t", "inputSchema": {"type": "object", "$schema": 3}})


def test_number_schema_bounds_keep_their_type() -> None:
    schema = m26.NumberSchema.model_validate({"type": "number", "minimum": 0, "maximum": 2.5})
    assert schema.model_dump(mode="json", exclude_unset=True) == {"type": "number", "minimum": 0, "maximum": 2.5}


# -- tolerances the spec asks receivers for ------------------------------------------------


def test_missing_cache_fields_default_conservatively() -> None:
    result = m26.ListToolsResult.model_validate({"tools": []})
    assert result.ttl_ms == 0
    assert result.cache_scope == "private"
    assert result.result_type == "complete"
    assert result.model_dump(by_alias=True, exclude_unset=True) == {"tools": []}


def test_negative_ttl_is_read_not_refused() -> None:
    assert m26.ListToolsResult.model_validate({"tools": [], "ttlMs": -5}).ttl_ms == -5


# -- wire names, open objects -------------------------------------------------------------


def test_meta_and_other_wire_names_roundtrip() -> None:
    raw = {
        "name": "echo",
        "arguments": {"text": "hi"},
        "_meta": {**META, "progressToken": "p1", "com.example/trace": {"id": 1}},
    }
    params = m26.CallToolRequestParams.model_validate(raw)
    assert params.meta.get("progressToken") == "p1"  # a `_meta` object is a TypedDict (wire-keyed)
    assert params.meta["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
    assert params.meta["com.example/trace"] == {"id": 1}  # unknown keys kept
    assert params.model_dump(mode="json", exclude_unset=True) == raw
    assert params.model_dump(mode="json", by_alias=True, exclude_unset=True) == raw


def test_python_names_construct_and_dump_as_wire_names() -> None:
    result = m26.CallToolResult(content=[m26.TextContent(type="text", text="hi")], is_error=True)
    assert result.model_dump(by_alias=True, exclude_unset=True) == {
        "content": [{"type": "text", "text": "hi"}],
        "isError": True,
    }
    schema = TypeAdapter(m26.ToolInputSchema).validate_python(
        {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object"}
    )
    assert schema.get("$schema") == "https://json-schema.org/draft/2020-12/schema"


def test_open_objects_keep_unknown_keys() -> None:
    result = m26.CallToolResult.model_validate({"content": [], "vendorField": {"a": 1}})
    assert result.model_dump(mode="json", exclude_unset=True)["vendorField"] == {"a": 1}
    raw = {"tools": {"listChanged": True, "x": 1}, "newCapability": {}}
    assert TypeAdapter(m26.ServerCapabilities).validate_python(raw) == raw
    discovered = {"supportedVersions": ["2026-07-28"], "capabilities": raw, "serverInfo": {"name": "s", "version": "1"}}
    assert m26.DiscoverResult.model_validate(discovered).model_dump(mode="json")["capabilities"] == raw


# -- discriminated unions -------------------------------------------------------------------


def test_content_blocks_discriminate_on_type() -> None:
    adapter: TypeAdapter[Any] = TypeAdapter(m26.ContentBlock)
    assert isinstance(adapter.validate_python({"type": "text", "text": "x"}), m26.TextContent)
    with pytest.raises(ValidationError, match=r"union_tag_invalid|does not match any of the expected tags"):
        adapter.validate_python({"type": "video", "text": "x"})


def test_incoming_requests_discriminate_on_method() -> None:
    adapter: TypeAdapter[Any] = TypeAdapter(m26.ClientRequest)
    msg = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"_meta": META, "name": "x"}}
    assert isinstance(adapter.validate_python(msg), m26.CallToolRequest)
    with pytest.raises(ValidationError, match="does not match any of the expected tags"):
        adapter.validate_python({**msg, "method": "tools/nope"})
    adapter25: TypeAdapter[Any] = TypeAdapter(m25.ServerRequest)
    assert isinstance(
        adapter25.validate_python({"jsonrpc": "2.0", "id": 1, "method": "roots/list"}), m25.ListRootsRequest
    )


def test_input_requests_discriminate_on_method() -> None:
    result = m26.InputRequiredResult.model_validate(
        {
            "resultType": "input_required",
            "inputRequests": {
                "a": {"method": "roots/list"},
                "b": {
                    "method": "elicitation/create",
                    "params": {"message": "m", "requestedSchema": {"type": "object", "properties": {}}},
                },
            },
        }
    )
    assert result.input_requests is not None
    assert isinstance(result.input_requests["a"], m26.ListRootsRequest)
    assert isinstance(result.input_requests["b"], m26.ElicitRequest)


def test_legacy_tables_pair_task_results() -> None:
    spec = methods25.METHODS["tools/call"]
    assert spec.result == (m25.CallToolResult, m25.CreateTaskResult)
    task = {
        "task": {
            "taskId": "t",
            "status": "working",
            "createdAt": "2025-01-01T00:00:00Z",
            "lastUpdatedAt": "2025-01-01T00:00:00Z",
            "ttl": None,
        }
    }
    assert isinstance(spec.parse_result(task), m25.CreateTaskResult)
    assert isinstance(spec.parse_result({"content": []}), m25.CallToolResult)


def test_errors_table_carries_mcp_error_codes() -> None:
    error = methods26.ERRORS[-32022]
    parsed = error.error.model_validate(
        {
            "code": -32022,
            "message": "Unsupported protocol version",
            "data": {"supported": ["2026-07-28"], "requested": "1"},
        }
    )
    assert parsed.data.supported == ["2026-07-28"]
    with pytest.raises(ValidationError):
        error.error.model_validate({"code": -32000, "message": "x", "data": {"supported": [], "requested": "1"}})


def test_elicitation_field_schemas_are_split_by_type_and_keys() -> None:
    split: TypeAdapter[Any] = TypeAdapter(m26.PrimitiveSchemaDefinition)
    members = (
        m26.StringSchema
        | m26.NumberSchema
        | m26.BooleanSchema
        | m26.UntitledSingleSelectEnumSchema
        | m26.TitledSingleSelectEnumSchema
        | m26.UntitledMultiSelectEnumSchema
        | m26.TitledMultiSelectEnumSchema
        | m26.LegacyTitledEnumSchema
    )
    plain: TypeAdapter[Any] = TypeAdapter(members)
    values: list[dict[str, Any]] = [
        {"type": "string", "minLength": 1},
        {"type": "string", "enum": ["a"]},
        {"type": "string", "enum": ["a"], "enumNames": ["A"]},
        {"type": "string", "oneOf": [{"const": "a", "title": "A"}]},
        {"type": "integer", "minimum": 0},
        {"type": "boolean", "default": True},
        {"type": "array", "items": {"type": "string", "enum": ["a"]}},
        {"type": "array", "items": {"anyOf": [{"const": "a", "title": "A"}]}},
    ]
    for value in values:
        expected = plain.validate_python(value)
        got = split.validate_python(value)
        assert type(got) is type(expected), value
        assert split.dump_python(got, mode="json", exclude_unset=True) == value
    for bad in ({"type": "object"}, {"type": "number", "minimum": "0"}, {"enum": ["a"]}):
        with pytest.raises(ValidationError):
            split.validate_python(bad)
