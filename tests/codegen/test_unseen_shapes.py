"""Shapes the pinned schemas do not have, in a schema the generator has never seen."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from click.testing import CliRunner
from mcpgen.codegen.cli import main
from pydantic import BaseModel, TypeAdapter, ValidationError
from typing_extensions import is_typeddict

VERSION = "2031-02-03"


def schema() -> dict[str, Any]:
    ref = lambda name: {"$ref": f"#/$defs/{name}"}  # noqa: E731
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$defs": {
            "Closed": {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": False},
            "Either": {
                "type": "object",
                "properties": {"a": {"type": "string"}},
                "anyOf": [{"required": ["a"]}, {"required": ["zzz"]}],
            },
            "Stamp": {
                "type": "object",
                "properties": {"at": {"type": "string", "format": "date-time"}},
                "required": ["at"],
            },
            "Odd": {
                "type": "object",
                "properties": {
                    "list": {"type": "array", "items": {"type": "integer"}, "uniqueItems": True},
                    "json": {"type": "string"},
                    "model_config": {"type": "integer"},
                    "tags": {
                        "type": "object",
                        "additionalProperties": {"type": "string"},
                        "propertyNames": {"pattern": "^[a-z]+$"},
                    },
                },
            },
            "PingRequest": {
                "type": "object",
                "properties": {
                    "jsonrpc": {"const": "2.0", "type": "string"},
                    "id": {"type": ["string", "integer"]},
                    "method": {"const": "ping", "type": "string"},
                    "params": {
                        "type": "object",
                        "properties": {
                            "echo": ref("Stamp"),
                            "who": ref("Agent"),
                            "_meta": ref("Trace"),
                            "drawn": ref("Sketch"),
                        },
                    },
                },
                "required": ["jsonrpc", "id", "method"],
            },
            "ClientRequest": {"anyOf": [ref("PingRequest")]},
            # a union split by a property with a few values per member, not one each, and by
            # the keys only some members of one value require (one has a wire name of two words)
            "Disc": {
                "type": "object",
                "properties": {"kind": {"const": "round", "type": "string"}, "r": {"type": "number"}},
                "required": ["kind", "r"],
            },
            "Ring": {
                "type": "object",
                "properties": {
                    "kind": {"const": "round", "type": "string"},
                    "r": {"type": "number"},
                    "innerRadius": {"type": "number"},
                },
                "required": ["kind", "r", "innerRadius"],
            },
            "Box": {
                "type": "object",
                "properties": {"kind": {"enum": ["square", "rect"], "type": "string"}, "w": {"type": "number"}},
                "required": ["kind", "w"],
            },
            "Shape": {"anyOf": [ref("Disc"), ref("Ring"), ref("Box")]},
            "Drawing": {
                "type": "object",
                "properties": {"shapes": {"type": "array", "items": ref("Shape")}},
                "required": ["shapes"],
            },
            # a map keyed by wire names holding a def that is a model where it stands alone (its
            # twin's name taken by another def), and one holding a union of models
            "Agent": {
                "type": "object",
                "description": "Who sent it.",
                "properties": {
                    "name": {"type": "string"},
                    "level": {"type": "integer", "minimum": 0},
                    "badges": {"type": "array", "items": ref("Badge")},
                },
                "required": ["name"],
            },
            "Badge": {
                "type": "object",
                "properties": {"label": {"type": "string"}, "color": {"enum": ["red", "blue"], "type": "string"}},
                "required": ["label"],
            },
            "AgentDict": {"type": "string"},
            "Trace": {
                "type": "object",
                "properties": {"com.example/agent": ref("Agent"), "com.example/depth": {"type": "integer"}},
                "required": ["com.example/agent"],
            },
            "Sketch": {"type": "object", "properties": {"com.example/shape": ref("Shape")}},
            "Result": {"type": "object", "properties": {}, "additionalProperties": {}},
            "EmptyResult": ref("Result"),
        },
    }


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ModuleType, str, Path]]:
    root = tmp_path_factory.mktemp("unseen")
    (root / "schemas" / VERSION).mkdir(parents=True)
    (root / "schemas" / VERSION / "schema.json").write_text(json.dumps(schema()))
    out = root / "tree" / "unseen_mcp"
    data = Path(__file__).resolve().parents[2] / "schema"
    result = CliRunner().invoke(
        main,
        [
            "generate",
            "--schema-dir",
            str(root / "schemas"),
            "--out",
            str(out),
            "--version",
            VERSION,
            "--data-dir",
            str(data),
            "--no-pin-check",
        ],
    )
    assert result.exit_code == 0, result.output
    sys.path.insert(0, str(out.parent))
    try:
        yield importlib.import_module(f"{out.name}.v2031_02_03.models"), result.output, out
    finally:
        sys.path.remove(str(out.parent))


def test_closed_objects_refuse_unknown_keys(generated: tuple[ModuleType, str, Path]) -> None:
    models, _, _ = generated
    assert models.Closed.model_validate({"a": "x"}).a == "x"
    with pytest.raises(ValidationError):
        models.Closed.model_validate({"a": "x", "b": 1})


def test_at_least_one_of_with_an_undeclared_key(generated: tuple[ModuleType, str, Path]) -> None:
    models, _, _ = generated
    assert models.Either.model_validate({"zzz": 1}).model_extra == {"zzz": 1}
    assert models.Either.model_validate({"a": "x"}).a == "x"
    with pytest.raises(ValidationError, match="at least one of"):
        models.Either.model_validate({"other": 1})


def test_formats_stay_strings(generated: tuple[ModuleType, str, Path]) -> None:
    models, _, _ = generated
    stamp = "2026-01-01T00:00:00.000+02:00"
    assert models.Stamp.model_validate({"at": stamp}).model_dump(mode="json")["at"] == stamp


def test_awkward_property_names(generated: tuple[ModuleType, str, Path]) -> None:
    models, _, _ = generated
    data = {"list": [1, 2], "json": "j", "model_config": 3, "tags": {"a": "b"}}
    assert models.Odd.model_validate(data).model_dump(mode="json", exclude_unset=True) == data


def test_unenforced_keywords_are_reported(generated: tuple[ModuleType, str, Path]) -> None:
    _, output, _ = generated
    assert "/$defs/Odd/properties/list/uniqueItems: `uniqueItems` is not enforced" in output
    assert "propertyNames" in output


def test_the_table_comes_from_the_role_union(generated: tuple[ModuleType, str, Path]) -> None:
    _, _, out = generated
    methods = importlib.import_module(f"{out.name}.v2031_02_03.methods")
    spec = methods.METHODS["ping"]
    assert spec.params.__name__ == "PingRequestParams"
    assert spec.result[0].__name__ == "EmptyResult"


def test_generated_code_is_mypy_clean(generated: tuple[ModuleType, str, Path]) -> None:
    _, _, out = generated
    config = Path(__file__).resolve().parents[2] / "pyproject.toml"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            str(config),
            "--no-incremental",
            str(out / "v2031_02_03" / "models"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout


def test_conflicting_all_of_constraints_are_an_error(tmp_path: Path) -> None:
    bad = schema()
    bad["$defs"]["Both"] = {"allOf": [{"anyOf": [{"required": ["a"]}]}, {"anyOf": [{"required": ["b"]}]}]}
    (tmp_path / VERSION).mkdir()
    (tmp_path / VERSION / "schema.json").write_text(json.dumps(bad))
    result = CliRunner().invoke(
        main,
        [
            "methods",
            VERSION,
            "--schema-dir",
            str(tmp_path),
            "--data-dir",
            str(Path(__file__).resolve().parents[2] / "schema"),
        ],
    )
    assert result.exit_code == 1 and "cannot be merged" in result.output
    assert f"{VERSION}/schema.json#/$defs/Both" in result.output


def _core_types(schema: Any) -> set[str]:
    if isinstance(schema, dict):
        return {str(schema.get("type")), *(t for value in schema.values() for t in _core_types(value))}
    if isinstance(schema, list):
        return {t for value in schema for t in _core_types(value)}
    return set()


SHAPES: list[Any] = [
    {"kind": "round", "r": 1},
    {"kind": "round", "r": 1, "innerRadius": 0.5},
    {"kind": "round", "r": 1, "inner_radius": 0.5},  # Python names are accepted as well
    {"kind": "round", "innerRadius": 0.5},
    {"kind": "square", "w": 2},
    {"kind": "rect", "w": 2, "x": [1]},
    {"kind": "oval", "r": 1},
    {"kind": ["round"], "r": 1},
    {"r": 1},
    "round",
]


def test_a_union_split_by_shape_picks_what_the_plain_union_picks(generated: tuple[ModuleType, str, Path]) -> None:
    models, _, _ = generated
    split: TypeAdapter[Any] = TypeAdapter(models.Shape)
    assert "tagged-union" in _core_types(split.core_schema)  # checked against the members it can be only
    plain: TypeAdapter[Any] = TypeAdapter(models.Disc | models.Ring | models.Box)  # every member tried
    for value in SHAPES:
        try:
            expected: Any = type(plain.validate_python(value))
        except ValidationError:
            expected = ValidationError
        try:
            got: Any = type(split.validate_json(json.dumps(value)))
        except ValidationError:
            got = ValidationError
        assert got is expected, value
    ring = models.Ring(kind="round", r=1, inner_radius=0.5)
    assert split.validate_python(ring) is ring
    shapes = {"shapes": [{"kind": "rect", "w": 1, "x": 2}, {"kind": "round", "r": 3}]}
    assert models.Drawing.model_validate_json(json.dumps(shapes)).model_dump(mode="json") == shapes
    drawn = models.Drawing(shapes=[ring]).model_dump(mode="json")
    assert drawn == {"shapes": [{"kind": "round", "r": 1, "innerRadius": 0.5}]}
    with pytest.raises(ValidationError, match="union_tag_not_found"):
        split.validate_python({"kind": "oval"})


def test_a_wire_keyed_map_holds_plain_twins_of_models(generated: tuple[ModuleType, str, Path]) -> None:
    models, _, _ = generated
    assert is_typeddict(models.Trace)
    assert is_typeddict(models.AgentDict2) and is_typeddict(models.BadgeDict)  # `AgentDict` was taken
    assert TypeAdapter(models.AgentDict).validate_python("s") == "s"  # the def of that name is left as it is
    assert issubclass(models.Agent, BaseModel) and issubclass(models.Badge, BaseModel)
    assert "Who sent it." in (models.AgentDict2.__doc__ or "")
    meta = {
        "com.example/agent": {"name": "a", "level": 2, "badges": [{"label": "x", "color": "red"}], "x-more": [1]},
        "com.example/depth": 3,
        "org.other/key": True,
    }
    raw = {"who": {"name": "b"}, "_meta": meta}
    params = models.PingRequestParams.model_validate_json(json.dumps(raw))
    assert type(params.meta) is dict and type(params.meta["com.example/agent"]["badges"][0]) is dict
    assert isinstance(params.who, models.Agent)  # the def itself stays a model
    assert params.model_dump(mode="json") == raw  # unknown keys kept, nothing added
    for wrong in (
        {"name": 3},  # strict scalars
        {"name": "a", "level": -1},  # bounds
        {"name": "a", "badges": [{"color": "red"}]},  # a twin's required key
        {"name": "a", "badges": [{"label": "x", "color": "green"}]},  # a twin's enum
        {"level": 1},  # the twin's required key
    ):
        with pytest.raises(ValidationError):
            models.PingRequestParams.model_validate({"_meta": {**meta, "com.example/agent": wrong}})


def test_a_wire_keyed_map_reaching_a_union_of_models_stays_a_model(generated: tuple[ModuleType, str, Path]) -> None:
    models, _, _ = generated
    assert issubclass(models.Sketch, BaseModel)
    drawn = models.PingRequestParams.model_validate({"drawn": {"com.example/shape": {"kind": "square", "w": 2}}}).drawn
    assert isinstance(drawn, models.Sketch)
    assert not any(name.startswith(("DiscDict", "BoxDict", "ShapeDict")) for name in models.__all__)
