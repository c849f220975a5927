"""A spec change (method added, method removed, def renamed) is a regeneration: generate, methods
and diff report exactly that change, and the new tree imports from anywhere."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from mcpgen.codegen.cli import main
from support.schema_changes import (
    ADDED_DEFS,
    BASE,
    FUTURE,
    NEW_METHOD,
    REMOVED_DEFS,
    REMOVED_METHOD,
    RENAMED,
    to_draft07,
    write_schema,
)


def run(*args: str) -> str:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture
def future_dirs(future_tree: tuple[Path, Path]) -> tuple[Path, Path]:
    return future_tree


def methods_json(schemas: Path, version: str, data_dir: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads(
        run("methods", version, "--json", "--schema-dir", str(schemas), "--data-dir", str(data_dir))
    )
    return rows


def test_methods_report_exactly_the_change(future_dirs: tuple[Path, Path], schema_dir: Path) -> None:
    schemas, _ = future_dirs
    before = {r["method"]: r for r in methods_json(schemas, BASE, schema_dir)}
    after = {r["method"]: r for r in methods_json(schemas, FUTURE, schema_dir)}
    assert set(after) - set(before) == {NEW_METHOD}
    assert set(before) - set(after) == {REMOVED_METHOD}
    assert after[NEW_METHOD] == {
        "method": NEW_METHOD,
        "kind": "request",
        "direction": "client_to_server",
        "params": "GetWidgetRequestParams",
        "params_required": True,
        "result": ["GetWidgetResult"],
        "may_require_input": False,
        "capability": None,
        "deprecated": False,
        "name_param": None,
    }
    for method in set(before) & set(after):
        assert before[method] == after[method], method


def test_diff_reports_exactly_the_change(future_dirs: tuple[Path, Path], schema_dir: Path) -> None:
    schemas, _ = future_dirs
    d = json.loads(run("diff", BASE, FUTURE, "--json", "--schema-dir", str(schemas), "--data-dir", str(schema_dir)))
    assert [m["method"] for m in d["methods"]["added"]] == [NEW_METHOD]
    assert [m["method"] for m in d["methods"]["removed"]] == [REMOVED_METHOD]
    assert d["methods"]["changed"] == []
    old, new = RENAMED
    assert set(d["defs"]["added"]) == {*ADDED_DEFS, new}
    # the removed request's inline objects were hoisted into defs of their own; they go with it
    removed = set(d["defs"]["removed"])
    assert {*REMOVED_DEFS, old} <= removed
    assert all(name.startswith("Complete") for name in removed - {old}), removed
    changed = {e["def"]: e for e in d["defs"]["changed"]}
    # the unions that list requests and results gained and lost exactly the changed members
    union_before, union_after = changed.pop("ClientRequest")["shape"]
    assert set(union_after.split(" | ")) - set(union_before.split(" | ")) == {"GetWidgetRequest"}
    assert {m.removeprefix("union: ") for m in set(union_before.split(" | ")) - set(union_after.split(" | "))} == {
        "CompleteRequest"
    }
    results_before, results_after = changed.pop("ServerResult")["shape"]
    assert set(results_before.split(" | ")) - set(results_after.split(" | ")) == {"CompleteResult"}
    # every other change is a field whose type was the renamed def
    for entry in changed.values():
        assert set(entry) == {"def", "fields_changed"}, entry
        for f in entry["fields_changed"]:
            assert set(f) == {"name", "type"}
            assert f["type"][0].replace(old, new) == f["type"][1]
    assert "TextContent" in changed


def test_diff_text_is_readable(future_dirs: tuple[Path, Path], schema_dir: Path) -> None:
    schemas, _ = future_dirs
    text = run("diff", BASE, FUTURE, "--schema-dir", str(schemas), "--data-dir", str(schema_dir))
    assert f"+ {NEW_METHOD}" in text
    assert f"- {REMOVED_METHOD}" in text
    assert "Methods: 1 added, 1 removed, 0 changed" in text


def test_generated_tree_imports_from_anywhere_and_serves_the_new_method(future_dirs: tuple[Path, Path]) -> None:
    _, out = future_dirs
    sys.path.insert(0, str(out.parent))
    try:
        versions = importlib.import_module(f"{out.name}.versions")
        assert versions.SUPPORTED == (BASE, FUTURE)
        assert versions.LATEST == FUTURE
        assert versions.era(FUTURE) == "modern"
        table = versions.methods(FUTURE)
        spec = table[NEW_METHOD]
        assert REMOVED_METHOD not in table
        models = importlib.import_module(f"{out.name}.v2027_01_15.models")
        assert hasattr(models, RENAMED[1]) and not hasattr(models, RENAMED[0])
        params = spec.parse_params(
            {
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": FUTURE,
                    "io.modelcontextprotocol/clientCapabilities": {},
                },
                "widgetId": "w1",
            }
        )
        assert params.widget_id == "w1"
        result = spec.parse_result({"widget": "cog"})
        assert isinstance(result, models.GetWidgetResult)
        assert result.result_type == "complete"
    finally:
        sys.path.remove(str(out.parent))


def test_draft07_input_gives_the_same_table(tmp_path: Path, schema_dir: Path) -> None:
    doc = json.loads((schema_dir / "2025-11-25" / "schema.json").read_text())
    write_schema(tmp_path, "2025-11-25", to_draft07(doc))
    draft07 = methods_json(tmp_path, "2025-11-25", schema_dir)
    original = methods_json(schema_dir, "2025-11-25", schema_dir)
    assert draft07 == original


def test_unseen_version_name_generates(tmp_path: Path, schema_dir: Path) -> None:
    """Nothing is keyed to a version string: the 2025 schema under another date generates the same table."""
    doc = json.loads((schema_dir / "2025-11-25" / "schema.json").read_text())
    write_schema(tmp_path / "schemas", "2025-06-18", doc)
    out = tmp_path / "alt"
    run(
        "generate",
        "--schema-dir",
        str(tmp_path / "schemas"),
        "--out",
        str(out),
        "--version",
        "2025-06-18",
        "--data-dir",
        str(schema_dir),
        "--no-pin-check",
    )
    assert (out / "v2025_06_18" / "models" / "__init__.py").is_file()
    rows = methods_json(tmp_path / "schemas", "2025-06-18", schema_dir)
    assert [r["method"] for r in rows] == [r["method"] for r in methods_json(schema_dir, "2025-11-25", schema_dir)]
