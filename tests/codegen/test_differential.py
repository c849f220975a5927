"""Differential testing: the generated models against `jsonschema` on the (fixed) schema.

For every message def of every pinned version (each method's message, params and results),
a small hypothesis strategy (tests/jsonschema_strategy.py) draws instances; whatever `jsonschema`
accepts, the model must accept (read as JSON text, the way the runtime reads it) and dump back
unchanged with no dump arguments. Then a sample of mutations of each instance (required key
dropped, wrong type, const changed, optional key set to null, wrapped in an array) must be
judged the same way by both, except for the disagreements listed in `KNOWN_DISAGREEMENTS`,
which the README documents with their reasons.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcpgen.codegen.fixes import apply_fixes, load_rules
from mcpgen.codegen.loader import load_schema
from mcpgen.codegen.normalize import normalize
from mcpgen.generated import versions
from pydantic import BaseModel, TypeAdapter, ValidationError
from support.jsonschema_strategy import from_schema

SCHEMA_DIR = Path(__file__).resolve().parents[2] / "schema"

# Mutations where the models deliberately differ from JSON Schema (see README, "Differential testing").
KNOWN_DISAGREEMENTS = {
    # An optional field set to an explicit null: the models type optional fields as `X | None`
    # (so Python code can pass None), so they accept null where the schema says "absent or X".
    "optional-null",
}


def message_defs(version: str) -> list[str]:
    names: set[str] = set()
    for spec in versions.methods(version).values():
        names.add(spec.message.__name__)
        if spec.params is not None:
            names.add(spec.params.__name__)
        names.update(model.__name__ for model in spec.result)
    return sorted(names)


CASES = [(v, name) for v in versions.SUPPORTED for name in message_defs(v)]


@functools.cache
def fixed_defs(version: str) -> dict[str, Any]:
    """The fixed schema with inline objects hoisted to the def names the models use.

    Normalisation only renames and restructures; the "at least one of" constraint it lifts out
    for the model template is put back here so `jsonschema` checks it too.
    """
    doc = load_schema(SCHEMA_DIR, version)
    fixed, _ = apply_fixes(doc, load_rules(SCHEMA_DIR / "fixes.toml"))
    norm = normalize(fixed)
    defs = norm.doc.defs
    for name, groups in norm.require_any_of.items():
        defs[name]["anyOf"] = [{"required": group} for group in groups]
    return defs


@functools.cache
def validator(version: str, name: str) -> jsonschema.Draft202012Validator:
    schema = {"$defs": fixed_defs(version), "$ref": f"#/$defs/{name}"}
    return jsonschema.Draft202012Validator(schema)


def model_accepts(version: str, name: str, instance: Any) -> tuple[bool, str]:
    target = getattr(versions.module(version).models, name)
    raw = json.dumps(instance)
    try:
        if isinstance(target, type) and issubclass(target, BaseModel):
            target.model_validate_json(raw)
        else:
            TypeAdapter(target).validate_json(raw)
    except ValidationError as exc:
        return False, str(exc)
    return True, ""


def dump_back(version: str, name: str, instance: Any) -> Any:
    """Parse JSON text, dump with no arguments, parse the dump: what a user sends back."""
    target = getattr(versions.module(version).models, name)
    raw = json.dumps(instance)
    if isinstance(target, type) and issubclass(target, BaseModel):
        return json.loads(target.model_validate_json(raw).model_dump_json())
    adapter: TypeAdapter[Any] = TypeAdapter(target)
    return json.loads(adapter.dump_json(adapter.validate_json(raw), by_alias=True, exclude_unset=True))


def schema_of(version: str, name: str) -> dict[str, Any]:
    node = fixed_defs(version)[name]
    while isinstance(node, dict) and set(node) <= {"$ref", "description"} and "$ref" in node:
        node = fixed_defs(version)[node["$ref"].rsplit("/", 1)[1]]
    return node if isinstance(node, dict) else {}


def mutations(version: str, name: str, instance: Any) -> list[tuple[str, Any]]:
    """Small, single changes to a valid instance, each with a kind."""
    if not isinstance(instance, dict):
        return []
    schema = schema_of(version, name)
    props = schema.get("properties", {})
    out: list[tuple[str, Any]] = []
    for key in schema.get("required", []):
        if key in instance:
            out.append(("drop-required", {k: v for k, v in instance.items() if k != key}))
    for key, value in instance.items():
        prop = props.get(key, {})
        wrong: Any = 12345 if isinstance(value, str) else "not-a-number" if isinstance(value, (int, float)) else "x"
        if isinstance(value, bool):
            wrong = "true"
        out.append(("wrong-type", {**instance, key: wrong}))
        if isinstance(prop, dict) and "const" in prop:
            out.append(("const-changed", {**instance, key: str(prop["const"]) + "-other"}))
        if key not in schema.get("required", []) and value is not None:
            out.append(("optional-null", {**instance, key: None}))
    out.append(("array-instead", [instance]))
    return out


@pytest.mark.parametrize(("version", "name"), CASES, ids=[f"{v}:{n}" for v, n in CASES])
def test_model_agrees_with_jsonschema(version: str, name: str) -> None:
    check = validator(version, name)
    strategy = from_schema({"$ref": f"#/$defs/{name}"}, fixed_defs(version))

    @settings(max_examples=12, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(instance=strategy, data=st.data())
    def run(instance: Any, data: st.DataObject) -> None:
        if not check.is_valid(instance):  # drawn from a simplified schema; keep only true instances
            return
        accepted, why = model_accepts(version, name, instance)
        assert accepted, f"jsonschema accepts but the model refuses {json.dumps(instance)[:400]}:\n{why}"
        dumped = dump_back(version, name, instance)
        assert dumped == instance, f"parse then dump (no arguments) changed {json.dumps(instance)[:400]}"
        options = mutations(version, name, instance)
        if not options:
            return
        for kind, mutated in data.draw(st.lists(st.sampled_from(options), min_size=1, max_size=4, unique_by=id)):
            schema_ok = check.is_valid(mutated)
            model_ok, why = model_accepts(version, name, mutated)
            if schema_ok != model_ok and kind not in KNOWN_DISAGREEMENTS:
                pytest.fail(
                    f"{kind}: jsonschema {'accepts' if schema_ok else 'refuses'}, model "
                    f"{'accepts' if model_ok else 'refuses'}: {json.dumps(mutated)[:400]}\n{why}"
                )

    run()


def test_known_disagreement_is_real() -> None:
    """The listed disagreement exists (so the list is not stale): explicit null on an optional field."""
    version, name = "2026-07-28", "CallToolResult"
    instance = {"content": [], "isError": None}
    assert not validator(version, name).is_valid(instance)
    assert model_accepts(version, name, instance)[0]
