"""The fix-rule engine: shape patterns, operations, reports, and errors that name their source."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcpgen.codegen.errors import GenerationError
from mcpgen.codegen.fixes import FixRule, apply_fixes, load_rules, matches
from mcpgen.codegen.loader import SchemaDocument


def doc(defs: dict[str, object]) -> SchemaDocument:
    return SchemaDocument("2030-01-01", Path("x/schema.json"), "0" * 64, "2020-12", json.loads(json.dumps(defs)))


@pytest.mark.parametrize(
    ("pattern", "node", "expected"),
    [
        ({"type": "string"}, {"type": "string", "description": "d"}, True),
        ({"type": "string"}, {"type": "integer"}, False),
        ({"type": ["string", "integer"]}, {"type": ["integer", "string"]}, False),
        ({"a": "$any"}, {"a": None}, True),
        ({"a": "$any"}, {}, False),
        ({"a": {"$absent": True}}, {}, True),
        ({"a": {"$absent": True}}, {"a": 1}, False),
        ({"$contains": [{"x": 1}]}, [{"x": 1, "y": 2}, 3], True),
        ({"$contains": [{"x": 1}]}, {"x": 1}, False),
        ({"$not": {"type": "string"}}, {"type": "object"}, True),
        (True, 1, False),
        (1, 1, True),
    ],
)
def test_pattern_language(pattern: object, node: object, expected: bool) -> None:
    assert matches(pattern, node) is expected


def test_rules_apply_by_shape_and_report_where() -> None:
    source = doc(
        {
            "A": {"type": "object", "properties": {"ttl": {"type": "integer", "minimum": 0}}, "required": ["ttl", "x"]},
            "B": {"type": "object", "properties": {"ttl": {"type": "string"}}, "required": ["ttl"]},
        }
    )
    rule = FixRule(
        id="ttl",
        reason="r",
        select="/$defs/*",
        when={"properties": {"ttl": {"type": "integer"}}},
        remove_items={"required": ["ttl"]},
        remove=("properties/ttl/minimum",),
        set={"properties/ttl/default": 0},
    )
    fixed, report = apply_fixes(source, [rule])
    assert fixed.defs["A"] == {
        "type": "object",
        "properties": {"ttl": {"type": "integer", "default": 0}},
        "required": ["x"],
    }
    assert fixed.defs["B"] == source.defs["B"]
    assert report.applications[0].pointers == ("/$defs/A",)
    assert source.defs["A"]["required"] == ["ttl", "x"], "the input document is not modified"


def test_emptied_required_list_is_removed_and_unless_excludes() -> None:
    source = doc(
        {
            "A": {"properties": {"r": {"type": "string"}}, "required": ["r"]},
            "B": {"properties": {"r": {"type": "string"}, "skip": {}}, "required": ["r"]},
        }
    )
    rule = FixRule(
        id="r",
        reason="r",
        select="/$defs/*",
        when={"properties": {"r": "$any"}},
        unless={"properties": {"skip": "$any"}},
        remove_items={"required": ["r"]},
    )
    fixed, _ = apply_fixes(source, [rule])
    assert "required" not in fixed.defs["A"]
    assert fixed.defs["B"]["required"] == ["r"]


def test_context_pattern_looks_at_an_ancestor() -> None:
    source = doc(
        {
            "V": {"anyOf": [{"type": ["string", "integer"]}, {"type": "array", "items": {"$ref": "#/$defs/V"}}]},
            "W": {"anyOf": [{"type": ["string", "integer"]}]},
        }
    )
    rule = FixRule(
        id="c",
        reason="r",
        select="/$defs/*/anyOf/*",
        when={"type": ["string", "integer"]},
        context=__import__("mcpgen.codegen.fixes", fromlist=["Context"]).Context(1, {"$contains": [{"type": "array"}]}),
        set={"type": ["string", "number"]},
    )
    fixed, report = apply_fixes(source, [rule])
    assert fixed.defs["V"]["anyOf"][0] == {"type": ["string", "number"]}
    assert fixed.defs["W"]["anyOf"][0] == {"type": ["string", "integer"]}
    assert report.applications[0].pointers == ("/$defs/V/anyOf/0",)


def test_a_rule_that_matches_nothing_is_reported_not_fatal() -> None:
    rule = FixRule(id="gone", reason="upstream fixed it", select="/$defs/*", when={"nothing": "$any"})
    _, report = apply_fixes(doc({"A": {"type": "object"}}), [rule])
    assert report.unmatched == [rule]
    assert report.lines() == ["2030-01-01: fix gone matched nothing"]


def test_project_rules_load_and_each_has_a_reason(data_dir: Path) -> None:
    rules = load_rules(data_dir / "fixes.toml")
    assert rules
    assert all(rule.reason and rule.id for rule in rules)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[[fix]]\nid = 'a'\nselect = '/x'\n", "reason"),
        ("[[fix]]\nid = 'a'\nreason = 'r'\nselect = '/x'\nbogus = 1\n", "unknown keys"),
        (
            "[[fix]]\nid = 'a'\nreason = 'r'\nselect = '/x'\n[[fix]]\nid = 'a'\nreason = 'r'\nselect = '/x'\n",
            "duplicate",
        ),
        ("[[fix]\n", "cannot read"),
    ],
)
def test_bad_rule_files_name_file_and_pointer(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "fixes.toml"
    path.write_text(text)
    with pytest.raises(GenerationError, match=message) as err:
        load_rules(path)
    assert str(path) in str(err.value)


def test_pinned_schemas_get_the_documented_repairs(schema_dir: Path, data_dir: Path) -> None:
    from mcpgen.codegen.loader import load_schema

    rules = load_rules(data_dir / "fixes.toml")
    _, report = apply_fixes(load_schema(schema_dir, "2026-07-28"), rules)
    applied = {a.rule.id: a.pointers for a in report.applied}
    assert applied["json-value-number-null"] == ("/$defs/JSONValue/anyOf/2",)
    assert "/$defs/InputRequiredResult" in applied["input-required-result-tag"]
    assert "/$defs/ElicitResult/properties/content/additionalProperties/anyOf/1" in applied["elicit-content-number"]
