"""Loading any dated schema folder, naming inline objects, and errors that say where they came from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcpgen.codegen.errors import GenerationError
from mcpgen.codegen.loader import load_schema
from mcpgen.codegen.normalize import normalize, pascal


def write(tmp_path: Path, version: str, content: str) -> Path:
    path = tmp_path / version / "schema.json"
    path.parent.mkdir(parents=True)
    path.write_text(content)
    return path


def test_malformed_json_names_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "2030-01-01", "{nope")
    with pytest.raises(GenerationError, match="not valid JSON") as err:
        load_schema(tmp_path, "2030-01-01")
    assert str(path) in str(err.value)


def test_unresolved_ref_names_file_and_pointer(tmp_path: Path) -> None:
    write(tmp_path, "2030-01-01", json.dumps({"$defs": {"A": {"properties": {"b": {"$ref": "#/$defs/Missing"}}}}}))
    with pytest.raises(GenerationError) as err:
        load_schema(tmp_path, "2030-01-01")
    assert "schema.json#/$defs/A/properties/b/$ref" in str(err.value)
    assert "Missing" in str(err.value)


def test_external_refs_are_refused_with_a_pointer(tmp_path: Path) -> None:
    write(tmp_path, "2030-01-01", json.dumps({"$defs": {"A": {"$ref": "other.json#/x"}}}))
    with pytest.raises(GenerationError, match="external reference") as err:
        load_schema(tmp_path, "2030-01-01")
    assert "#/$defs/A/$ref" in str(err.value)


def test_no_definitions_at_all(tmp_path: Path) -> None:
    write(tmp_path, "2030-01-01", json.dumps({"type": "object"}))
    with pytest.raises(GenerationError, match="neither `\\$defs` nor `definitions`"):
        load_schema(tmp_path, "2030-01-01")


def test_missing_version_folder(tmp_path: Path) -> None:
    with pytest.raises(GenerationError, match="no schema file for version 2030-01-01"):
        load_schema(tmp_path, "2030-01-01")


def test_version_must_be_dated(tmp_path: Path) -> None:
    with pytest.raises(GenerationError, match="not a dated version"):
        load_schema(tmp_path, "latest")


def test_draft07_refs_are_normalised(tmp_path: Path) -> None:
    write(
        tmp_path,
        "2030-01-01",
        json.dumps({"definitions": {"A": {"properties": {"b": {"$ref": "#/definitions/B"}}}, "B": {"type": "string"}}}),
    )
    doc = load_schema(tmp_path, "2030-01-01")
    assert doc.draft == "draft-07"
    assert doc.defs["A"]["properties"]["b"] == {"$ref": "#/$defs/B"}


def test_inline_objects_get_path_names_never_numbers(schema_dir: Path) -> None:
    norm = normalize(load_schema(schema_dir, "2026-07-28"))
    hoisted = set(norm.hoisted_from)
    assert {
        "CompleteRequestParamsArgument",
        "CompleteRequestParamsContext",
        "CompleteResultCompletion",
        "ClientCapabilitiesElicitation",
        "ServerCapabilitiesTools",
        "ToolInputSchema",
    } <= hoisted
    assert norm.hoisted_from["CompleteRequestParamsArgument"] == "/$defs/CompleteRequestParams/properties/argument"
    assert not [name for name in norm.doc.defs if name[-1].isdigit()], "no numbered names"


def test_same_property_name_in_different_parents_does_not_collide(schema_dir: Path) -> None:
    norm = normalize(load_schema(schema_dir, "2025-11-25"))
    tools = sorted(name for name in norm.hoisted_from if name.endswith("Tools"))
    assert tools == ["ServerCapabilitiesTasksRequestsTools", "ServerCapabilitiesTools"]


def test_naming_is_stable_across_runs(schema_dir: Path) -> None:
    a = normalize(load_schema(schema_dir, "2026-07-28"))
    b = normalize(load_schema(schema_dir, "2026-07-28"))
    assert a.doc.defs == b.doc.defs and a.hoisted_from == b.hoisted_from


@pytest.mark.parametrize(
    ("token", "name"),
    [
        ("_meta", "Meta"),
        ("inputSchema", "InputSchema"),
        ("io.modelcontextprotocol/clientInfo", "IoModelcontextprotocolClientInfo"),
        ("3d", "N3d"),
        ("", "Value"),
    ],
)
def test_pascal(token: str, name: str) -> None:
    assert pascal(token) == name


def test_discriminators_any_json_and_require_any_of(schema_dir: Path, data_dir: Path) -> None:
    from mcpgen.codegen.fixes import apply_fixes, load_rules

    raw = normalize(load_schema(schema_dir, "2026-07-28"))
    assert raw.discriminators["ContentBlock"][0] == "type"
    assert raw.discriminators["ClientRequest"][0] == "method"
    assert raw.discriminators["InputRequest"][0] == "method"
    assert raw.any_json == [], "without the fix, JSONValue lacks number and null"
    assert raw.require_any_of == {}
    fixed, _ = apply_fixes(load_schema(schema_dir, "2026-07-28"), load_rules(data_dir / "fixes.toml"))
    norm = normalize(fixed)
    assert norm.any_json == ["JSONValue"]
    assert norm.require_any_of == {"InputRequiredResult": [["inputRequests"], ["requestState"]]}


def _normalized(tmp_path: Path, defs: dict[str, object]) -> dict[str, object]:
    write(tmp_path, "2030-01-01", json.dumps({"$defs": defs}))
    return normalize(load_schema(tmp_path, "2030-01-01")).doc.defs


STATUS = {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}


def _tagged(tag: str, extra: dict[str, object] | None = None) -> dict[str, object]:
    props = {
        "id": {"type": "string"},
        "state": {"type": "string", "const": tag},
        "kind": {"const": "same", "type": "string"},
    }
    return {"type": "object", "properties": {**props, **(extra or {})}, "required": ["id", "state", "kind"]}


def test_all_of_with_one_union_is_distributed_over_it(tmp_path: Path) -> None:
    defs = _normalized(
        tmp_path,
        {
            "Base": {"type": "object", "properties": {"_meta": {"type": "object"}}},
            "Either": {
                "allOf": [
                    {"$ref": "#/$defs/Base"},
                    {"anyOf": [_tagged("on"), _tagged("off", {"why": {"type": "string"}})]},
                    {"type": "object", "properties": {"extra": {"type": "integer"}}},
                ]
            },
        },
    )
    either = defs["Either"]
    assert isinstance(either, dict) and "allOf" not in either
    branches = [b["$ref"] for b in either["anyOf"]]
    assert branches == ["#/$defs/EitherOn", "#/$defs/EitherOff"], "named by the tag that tells them apart"
    assert either["discriminator"]["propertyName"] == "state"
    for name in ("EitherOn", "EitherOff"):
        branch = defs[name]
        assert isinstance(branch, dict)
        assert {"_meta", "id", "state", "kind", "extra"} <= set(branch["properties"]), "every member merged in"


def test_an_inline_copy_of_a_def_refers_to_it(tmp_path: Path) -> None:
    defs = _normalized(
        tmp_path,
        {
            "Status": STATUS,
            "Holder": {
                "type": "object",
                "properties": {
                    "copy": {**STATUS, "description": "what it is for"},  # its own annotations may differ
                    "near": {**STATUS, "properties": {"id": {"type": "string", "description": "other"}}},
                },
            },
        },
    )
    holder = defs["Holder"]
    assert isinstance(holder, dict)
    assert holder["properties"]["copy"] == {"$ref": "#/$defs/Status", "description": "what it is for"}
    assert holder["properties"]["near"] == {"$ref": "#/$defs/HolderNear"}, "not a copy: an object of its own"


def test_an_inline_copy_of_two_alike_defs_is_not_guessed(tmp_path: Path) -> None:
    defs = _normalized(
        tmp_path,
        {"A": STATUS, "B": STATUS, "Holder": {"type": "object", "properties": {"x": STATUS}}},
    )
    holder = defs["Holder"]
    assert isinstance(holder, dict) and holder["properties"]["x"] == {"$ref": "#/$defs/HolderX"}
