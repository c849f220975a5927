"""`model_validate_json` of the generated models: once a model is built it is its validator's own
`validate_json`, with pydantic's keywords, checks and errors; a subclass and a forced rebuild never
parse with another class's validator."""

from __future__ import annotations

import json

import pytest
from mcpgen.generated.v2026_07_28 import models as m
from pydantic import ValidationError

CALL = {
    "jsonrpc": "2.0",
    "id": 7,
    "method": "tools/call",
    "params": {
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"sampling": {}},
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1", "x-extra": [1]},
        },
        "name": "echo",
        "arguments": {"a": 1},
    },
}
RAW = json.dumps(CALL)


def test_a_built_model_parses_with_its_validator_and_keeps_the_message() -> None:
    first = m.CallToolRequest.model_validate_json(RAW)  # builds the validator if not yet built
    parse = m.CallToolRequest.model_validate_json
    assert getattr(parse, "__self__", None) is m.CallToolRequest.__pydantic_validator__
    again = parse(RAW)
    assert type(again) is m.CallToolRequest
    assert again == first
    assert again.params.meta["io.modelcontextprotocol/clientInfo"]["name"] == "t"
    assert json.loads(again.model_dump_json()) == CALL  # unknown keys kept


def test_pydantics_keywords_checks_and_errors_hold() -> None:
    m.CallToolRequest.model_validate_json(RAW)
    with pytest.raises(ValidationError) as raised:
        m.CallToolRequest.model_validate_json(RAW.replace('"2.0"', '"1.0"'))
    assert raised.value.title == "CallToolRequest"
    assert [e["loc"] for e in raised.value.errors()] == [("jsonrpc",)]
    with pytest.raises(ValidationError):
        m.CallToolRequest.model_validate_json(RAW, extra="forbid", context={"a": 1}, strict=True, by_alias=True)
    with pytest.raises(ValueError, match="cannot both be set to `False`"):
        m.CallToolRequest.model_validate_json(RAW, by_alias=False, by_name=False)


def test_a_subclass_parses_as_itself_before_and_after_it_is_built() -> None:
    m.CallToolRequest.model_validate_json(RAW)

    class Logged(m.CallToolRequest):
        seen: int = 0

    assert type(Logged.model_validate_json(RAW)) is Logged  # not yet built: pydantic's own
    assert type(Logged.model_validate_json(RAW)) is Logged  # built: its own validator
    assert getattr(Logged.model_validate_json, "__self__", None) is Logged.__pydantic_validator__
    assert type(m.CallToolRequest.model_validate_json(RAW)) is m.CallToolRequest


def test_a_forced_rebuild_parses_with_the_new_validator() -> None:
    class Again(m.CallToolRequest):
        pass

    Again.model_validate_json(RAW)
    old = Again.__pydantic_validator__
    assert Again.model_rebuild(force=True) is True
    assert Again.__pydantic_validator__ is not old
    assert getattr(Again.model_validate_json, "__self__", None) is Again.__pydantic_validator__
    assert type(Again.model_validate_json(RAW)) is Again
