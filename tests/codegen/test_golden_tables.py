"""The dispatch table of each pinned version and extension, compared with a checked-in record of its facts.

A change shows as a readable unified diff of the JSON. After reviewing an intended change,
refresh the record with `MCPGEN_UPDATE_GOLDEN=1 pytest tests/codegen/test_golden_tables.py`.
"""

from __future__ import annotations

import difflib
import json
import os
from importlib import import_module
from pathlib import Path

import pytest
from click.testing import CliRunner
from mcpgen.codegen.cli import main
from mcpgen.generated import versions

GOLDEN = Path(__file__).parent / "golden"


def _compare(name: str, rows: list[dict[str, object]]) -> None:
    path = GOLDEN / name
    text = json.dumps(rows, indent=2) + "\n"
    if os.environ.get("MCPGEN_UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    expected = path.read_text(encoding="utf-8")
    if text != expected:
        diff = "".join(difflib.unified_diff(expected.splitlines(True), text.splitlines(True), str(path), "now"))
        pytest.fail(f"the method table changed:\n{diff}")


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
def test_cli_methods_json_matches_golden(version: str, schema_dir: Path) -> None:
    result = CliRunner().invoke(main, ["methods", version, "--json", "--schema-dir", str(schema_dir)])
    assert result.exit_code == 0, result.output
    _compare(f"methods-{version}.json", json.loads(result.output))


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
def test_generated_table_matches_golden(version: str) -> None:
    rows = [spec.as_json() for _, spec in sorted(versions.methods(version).items())]
    _compare(f"methods-{version}.json", rows)


def test_json_rows_have_exactly_the_documented_keys() -> None:
    rows = json.loads((GOLDEN / "methods-2026-07-28.json").read_text())
    keys = [
        "method",
        "kind",
        "direction",
        "params",
        "params_required",
        "result",
        "may_require_input",
        "capability",
        "deprecated",
        "name_param",
    ]
    for row in rows:
        assert list(row) == keys
        assert row["kind"] in ("request", "notification", "input_request")
        assert row["direction"] in ("client_to_server", "server_to_client", "both")


TASKS = "io.modelcontextprotocol/tasks"


def _extension_record(spec: object) -> dict[str, object]:
    """The facts of an extension's generated table, as `mcpgen methods EXT --json` has them."""
    from mcpgen.generated._spec import ExtensionSpec

    assert isinstance(spec, ExtensionSpec)
    rows = [row.as_json() for _, row in sorted(spec.methods.items())]
    settings = spec.settings.__name__ if spec.settings is not None else None
    return {"capability": list(spec.capability), "settings": settings, "methods": rows}


def test_cli_methods_of_the_pinned_extension_match_golden(schema_dir: Path) -> None:
    result = CliRunner().invoke(main, ["methods", TASKS, "--json", "--schema-dir", str(schema_dir)])
    assert result.exit_code == 0, result.output
    record = json.loads(result.output)
    assert record["extension"] == TASKS and record["version"] == "2026-07-28"
    _compare("extension-tasks-2026-07-28.json", [record])


def test_generated_extension_table_matches_golden() -> None:
    spec = versions.extension(TASKS, "2026-07-28")
    golden = json.loads((GOLDEN / "extension-tasks-2026-07-28.json").read_text(encoding="utf-8"))[0]
    assert _extension_record(spec) == {key: golden[key] for key in ("capability", "settings", "methods")}
    assert list(spec.augments) == golden["augments"] and list(spec.removes) == golden["removes"]
    table = import_module(spec.models.__name__.rsplit(".", 1)[0] + ".methods")  # beside its models
    assert list(table.REUSED) == golden["reused"]
    assert list(table.DIFFERS) == golden["differs"] + golden["differs_through"]
