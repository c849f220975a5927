"""Extension schemas as pinned generator inputs.

The pinned extension (tasks) is generated beside the core versions of this checkout's tree; an
extension mcpgen has never seen (written here, in the style of an extension schema: self-contained,
`allOf` envelopes, core defs repeated, one of them changed) flows through the same path: pins,
data, generate, `methods`, `diff`, reuse of the core version's models, pruning.
"""

from __future__ import annotations

import copy
import hashlib
import importlib
import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from click.testing import CliRunner, Result
from mcpgen.codegen.cli import main
from mcpgen.codegen.generate import generate
from mcpgen.codegen.loader import iter_refs, ref_name
from mcpgen.codegen.sync import extension_file, read_extension_pins, read_pins
from mcpgen.generated import versions
from mcpgen.generated._spec import ExtensionSpec, Gate
from mcpgen.generated.v2026_07_28 import models as core
from pydantic import BaseModel, ValidationError
from typing_extensions import is_typeddict

MODERN = "2026-07-28"


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def ok(*args: str) -> str:
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    return result.output


# -- the pinned extension in this checkout's tree ----------------------------------------------


@pytest.fixture(scope="module")
def pinned(schema_dir: Path) -> tuple[str, ExtensionSpec]:
    """The one extension this checkout pins, and its table on the modern version."""
    (pin,) = read_extension_pins(schema_dir)
    return pin.id, versions.extension(pin.id, MODERN)


def test_the_tree_lists_each_pinned_extension_on_the_versions_it_applies_to(
    schema_dir: Path, pinned: tuple[str, ExtensionSpec]
) -> None:
    ext_id, spec = pinned
    assert dict(versions.EXTENSIONS) == {ext_id: (MODERN,)}
    assert versions.extensions(MODERN) == {ext_id: spec}
    assert versions.extensions("2025-11-25") == {}, "extensions.toml: not defined under 2025-11-25"
    with pytest.raises(versions.UnknownExtensionError, match="applies to 2026-07-28"):
        versions.extension(ext_id, "2025-11-25")
    with pytest.raises(versions.UnknownExtensionError, match="extensions of this tree"):
        versions.extension("com.example/nothing", MODERN)
    assert spec.id == ext_id and spec.version == MODERN and spec.capability == ("extensions", ext_id)


def test_the_pinned_extension_reuses_the_core_models_it_repeats_alike(
    schema_dir: Path, pinned: tuple[str, ExtensionSpec]
) -> None:
    _, spec = pinned
    (pin,) = read_extension_pins(schema_dir)
    table = importlib.import_module(spec.models.__name__.rsplit(".", 1)[0] + ".methods")
    ext_defs = set(json.loads(extension_file(schema_dir, pin).read_text())["$defs"])
    core_defs = set(json.loads((schema_dir / MODERN / "schema.json").read_text())["$defs"])
    repeated = ext_defs & core_defs
    assert repeated, "the extension repeats core defs"
    assert set(table.REUSED) | set(table.DIFFERS) >= repeated
    for name in table.REUSED:
        assert getattr(spec.models, name) is getattr(core, name), name
    for name in ext_defs:  # every def of the extension's schema is a name of its models
        assert hasattr(spec.models, name), name
    own = [getattr(spec.models, n) for n in sorted(ext_defs - set(table.REUSED))]
    classes = [c for c in own if isinstance(c, type) and issubclass(c, BaseModel)]
    assert classes and all(c.__module__ == spec.models.__name__ for c in classes)


def test_applying_the_extension_to_a_table(pinned: tuple[str, ExtensionSpec]) -> None:
    _, spec = pinned
    table = versions.methods(MODERN)
    applied = spec.apply(table)
    assert not set(spec.removes) & set(applied)
    assert set(spec.methods) <= set(applied)
    for method in spec.augments:
        assert applied[method] is spec.methods[method] and method in table
        assert set(table[method].result) < set(spec.methods[method].result)
    assert {m: s for m, s in applied.items() if m not in spec.methods} == {
        m: s for m, s in table.items() if m not in spec.methods and m not in spec.removes
    }


def test_gate_keys_name_the_capability_path(pinned: tuple[str, ExtensionSpec]) -> None:
    ext_id, spec = pinned
    gated = [row.capability for method, row in spec.methods.items() if method not in spec.augments]
    assert gated and all(g is not None and g.keys == ("extensions", ext_id) for g in gated)
    assert Gate("server", "resources.subscribe").keys == ("resources", "subscribe")
    assert spec.declared_in({"extensions": {ext_id: {}}})
    assert not spec.declared_in({"extensions": {ext_id: False}})
    assert not spec.declared_in({"extensions": {}}) and not spec.declared_in(None)


# Messages in the shapes of the extension's specification text (tasks.md): a task-augmented tool
# call, polling through every status, input requests and responses, cancellation, a status
# notification. Each is (method, what it is, the wire object).
TASK = {"taskId": "4b1c-77", "createdAt": "2026-01-02T03:04:05Z", "lastUpdatedAt": "2026-01-02T03:05:00Z"}
ELICIT = {
    "method": "elicitation/create",
    "params": {
        "mode": "form",
        "message": "Which city?",
        "requestedSchema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}
TOOL_RESULT = {"content": [{"type": "text", "text": "Sunny"}], "isError": False}
MESSAGES: list[tuple[str, str, dict[str, Any]]] = [
    (
        "tools/call",
        "request",
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {
                "name": "forecast",
                "arguments": {"city": "Oslo"},
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": MODERN,
                    "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
                },
            },
        },
    ),
    (
        "tools/call",
        "result",
        {"resultType": "task", **TASK, "status": "working", "statusMessage": "queued", "ttlMs": 60000},
    ),
    ("tools/call", "result", {"resultType": "task", **TASK, "status": "working", "ttlMs": None, "pollIntervalMs": 500}),
    (
        "tools/call",
        "result",
        {"resultType": "task", **TASK, "status": "failed", "ttlMs": 1000, "error": {"code": -32603, "message": "x"}},
    ),
    ("tools/call", "result", TOOL_RESULT),
    ("tasks/get", "request", {"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {"taskId": "4b1c-77"}}),
    ("tasks/get", "result", {"resultType": "complete", **TASK, "status": "working", "ttlMs": 60000}),
    (
        "tasks/get",
        "result",
        {"resultType": "complete", **TASK, "status": "input_required", "ttlMs": 60000, "inputRequests": {"c": ELICIT}},
    ),
    (
        "tasks/get",
        "result",
        {"resultType": "complete", **TASK, "status": "completed", "ttlMs": 5, "result": TOOL_RESULT},
    ),
    (
        "tasks/get",
        "result",
        {"resultType": "complete", **TASK, "status": "failed", "ttlMs": 5, "error": {"code": -32603, "message": "x"}},
    ),
    ("tasks/get", "result", {"resultType": "complete", **TASK, "status": "cancelled", "ttlMs": None}),
    (
        "tasks/update",
        "request",
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tasks/update",
            "params": {"taskId": "4b1c-77", "inputResponses": {"c": {"action": "accept", "content": {"city": "Oslo"}}}},
        },
    ),
    ("tasks/update", "result", {"resultType": "complete"}),
    ("tasks/cancel", "request", {"jsonrpc": "2.0", "id": 4, "method": "tasks/cancel", "params": {"taskId": "4b1c-77"}}),
    ("tasks/cancel", "result", {"resultType": "complete"}),
    (
        "notifications/tasks",
        "notification",
        {
            "jsonrpc": "2.0",
            "method": "notifications/tasks",
            "params": {**TASK, "status": "completed", "ttlMs": 60000, "pollIntervalMs": 5000, "result": TOOL_RESULT},
        },
    ),
]


@pytest.mark.parametrize(("method", "what", "message"), MESSAGES, ids=lambda x: x if isinstance(x, str) else "")
def test_messages_of_the_extension_parse_by_its_table_and_dump_back(
    pinned: tuple[str, ExtensionSpec], method: str, what: str, message: dict[str, Any]
) -> None:
    _, spec = pinned
    row = spec.methods[method]
    if what == "result":
        parsed = row.parse_result(message)
        tags = dict(row.result_tags)
        if tags:  # told apart by resultType, an absent one meaning the default
            assert isinstance(parsed, tags[message.get("resultType", row.result_default_tag)])
    else:
        parsed = row.message.model_validate(message, by_name=False)
        row.parse_params(message["params"])
    assert isinstance(parsed, BaseModel)
    assert json.loads(parsed.model_dump_json()) == message
    assert parsed.model_dump(mode="json") == message


@pytest.mark.parametrize(
    ("method", "what", "message"),
    [
        ("tools/call", "result", {"resultType": "task", **TASK, "status": "paused", "ttlMs": 1}),
        ("tools/call", "result", {"resultType": "task", **TASK, "status": "working"}),  # ttlMs is required
        ("tasks/get", "params", {}),
        ("tasks/get", "result", {"resultType": "complete", **TASK, "status": "input_required", "ttlMs": 1}),
        ("tasks/get", "result", {"resultType": "complete", **TASK, "status": "completed", "ttlMs": 1}),
        ("tasks/update", "params", {"taskId": "t"}),
        ("notifications/tasks", "params", {**TASK, "status": "failed", "ttlMs": 1}),
    ],
)
def test_what_the_extension_refuses(
    pinned: tuple[str, ExtensionSpec], method: str, what: str, message: dict[str, Any]
) -> None:
    row = pinned[1].methods[method]
    with pytest.raises(ValidationError):
        row.parse_result(message) if what == "result" else row.parse_params(message)


# -- an extension mcpgen has never seen --------------------------------------------------------

UNSEEN = "com.example.widgets/v1"  # an id with dots: one key of the capabilities object
RELEASE = "2031-05-06"
DATA = """
[[extension]]
id = "com.example.widgets/v1"
since = "2026-01-01"
gate = "server"
settings = "WidgetsCapability"
removes = ["completion/complete", "widgets/legacy"]

[[extension.method]]
method = "widgets/get"
direction = "client_to_server"
name_param = "widgetId"

[[extension.method]]
method = "notifications/widgets/changed"
direction = "server_to_client"
gate = "both"

[[extension.augment]]
method = "tools/call"
result = "WidgetResult"
reason = "a tool call may answer with a widget"
"""
# repeated from the core schema; the core version's models make `ToolAnnotations` a TypedDict (an
# option set) and `NotificationParams` a model (a method's params)
ALIKE = ("JSONRPCRequest", "JSONRPCNotification", "Result", "Implementation", "ToolAnnotations", "NotificationParams")
CHANGED = "Icon"  # repeated, with a field of its own


def _closure(defs: dict[str, Any], names: tuple[str, ...]) -> set[str]:
    todo, seen = list(names), set()
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(ref_name(r) for _, r in iter_refs(defs[name]))
    return seen


def unseen_schema(core_schema: dict[str, Any], *, widget_field: str = "size") -> dict[str, Any]:
    ref = lambda name: {"$ref": f"#/$defs/{name}"}  # noqa: E731
    core_defs = core_schema["$defs"]
    repeated = {name: copy.deepcopy(core_defs[name]) for name in _closure(core_defs, ALIKE)}
    assert CHANGED in repeated, "the repeated defs refer to the one that is changed"
    repeated[CHANGED]["properties"]["dpi"] = {"type": "integer"}

    def request(method: str, params: dict[str, Any]) -> dict[str, Any]:
        return {
            "allOf": [
                ref("JSONRPCRequest"),
                {
                    "type": "object",
                    "properties": {"method": {"type": "string", "const": method}, "params": params},
                    "required": ["method", "params"],
                },
            ]
        }

    by_id = {"type": "object", "properties": {"widgetId": {"type": "string"}}, "required": ["widgetId"]}
    own = {
        "Widget": {
            "type": "object",
            "properties": {
                "widgetId": {"type": "string"},
                widget_field: {"type": "integer"},
                "maker": ref("Implementation"),
                "hints": ref("WidgetHints"),
                "note": ref("WidgetNote"),
                "label": ref("WidgetLabel"),
            },
            "required": ["widgetId"],
        },
        # an option set holding a def its core version makes a TypedDict, which the extension's
        # own schema also uses as a union member (where, on its own, it would be a model)
        "WidgetHints": {
            "type": "object",
            "properties": {"annotations": ref("ToolAnnotations"), "colors": {"type": "boolean"}},
        },
        "WidgetLabel": {"anyOf": [ref("ToolAnnotations"), {"type": "string"}]},
        # an option set holding a def its core version makes a model, which the extension's own
        # schema only uses as a value (where, on its own, it would be a TypedDict)
        "WidgetNote": {"type": "object", "properties": {"params": ref("NotificationParams")}},
        "WidgetsCapability": {"type": "object", "properties": {"colors": {"type": "boolean"}}},
        "GetWidgetRequest": request("widgets/get", by_id),
        "GetWidgetResult": {
            "allOf": [
                ref("Result"),
                {"type": "object", "properties": {"widget": ref("Widget")}, "required": ["widget"]},
            ]
        },
        "WidgetResult": {
            "allOf": [
                ref("Result"),
                {
                    "type": "object",
                    "properties": {"resultType": {"type": "string", "const": "widget"}, "widgetId": {"type": "string"}},
                    "required": ["resultType", "widgetId"],
                },
            ]
        },
        "WidgetChangedNotification": {
            "allOf": [
                ref("JSONRPCNotification"),
                {
                    "type": "object",
                    "properties": {
                        "method": {"type": "string", "const": "notifications/widgets/changed"},
                        "params": by_id,
                    },
                    "required": ["method", "params"],
                },
            ]
        },
        "OrphanRequest": request("widgets/orphan", by_id),  # extensions.toml gives it no direction
    }
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$defs": {**repeated, **own}}


def pins_text(core_pin: Any, ext_sha: str) -> str:
    return (
        f'[[version]]\nversion = "{MODERN}"\nrepo = "{core_pin.repo}"\ncommit = "{core_pin.commit}"\n'
        f'path = "{core_pin.path}"\nsha256 = "{core_pin.sha256}"\n\n'
        f'[[extension]]\nid = "{UNSEEN}"\nname = "widgets"\nrelease = "{RELEASE}"\nsha256 = "{ext_sha}"\n'
    )


class Unseen:
    """A project folder pinning the modern version and the unseen extension, with data of its own."""

    def __init__(self, root: Path, schema_dir: Path, data_dir: Path) -> None:
        self.root = root
        self.schemas = root / "schema"
        self.data = root / "data"
        self.out = root / "tree" / "widgets_mcp"
        self.data.mkdir()
        for path in data_dir.glob("*.toml"):
            if path.name != "versions.toml":
                shutil.copy(path, self.data / path.name)
        with (self.data / "extensions.toml").open("a", encoding="utf-8") as f:
            f.write(DATA)
        (self.schemas / MODERN).mkdir(parents=True)
        shutil.copy(schema_dir / MODERN / "schema.json", self.schemas / MODERN / "schema.json")
        self.core_schema = json.loads((schema_dir / MODERN / "schema.json").read_text())
        self.ext_file = self.schemas / "extensions" / "widgets" / RELEASE / "schema.json"
        self.ext_file.parent.mkdir(parents=True)
        self.ext_file.write_text(json.dumps(unseen_schema(self.core_schema), indent=1))
        core_pin = next(p for p in read_pins(schema_dir) if p.version == MODERN)
        ext_sha = hashlib.sha256(self.ext_file.read_bytes()).hexdigest()
        (self.schemas / "versions.toml").write_text(pins_text(core_pin, ext_sha))

    def args(self, *args: str) -> list[str]:
        return [*args, "--schema-dir", str(self.schemas), "--data-dir", str(self.data)]


@pytest.fixture(scope="module")
def unseen(tmp_path_factory: pytest.TempPathFactory, schema_dir: Path, data_dir: Path) -> Iterator[tuple[Unseen, str]]:
    project = Unseen(tmp_path_factory.mktemp("unseen-ext"), schema_dir, data_dir)
    output = ok(*project.args("generate", "--out", str(project.out), "--jobs", "1"))
    yield project, output
    for name in [m for m in sys.modules if m == "widgets_mcp" or m.startswith("widgets_mcp.")]:
        del sys.modules[name]


@pytest.fixture(scope="module")
def tree(unseen: tuple[Unseen, str]) -> Iterator[ModuleType]:
    project, _ = unseen
    sys.path.insert(0, str(project.out.parent))
    try:
        yield importlib.import_module("widgets_mcp.versions")
    finally:
        sys.path.remove(str(project.out.parent))


def test_an_unseen_extension_is_generated_beside_its_version(unseen: tuple[Unseen, str], tree: ModuleType) -> None:
    project, output = unseen
    assert f"{UNSEEN} ({RELEASE}) on {MODERN}: generated in " in output
    assert "widgets/orphan, but extensions.toml gives it no direction" in output
    assert (project.out / "ext_widgets" / "v2026_07_28" / "models.py").is_file()
    for path in [*project.out.rglob("*.py"), project.out / "manifest.json"]:
        assert str(project.root) not in path.read_text(), f"{path} holds a path of this machine"
    assert dict(tree.EXTENSIONS) == {UNSEEN: (MODERN,)}
    spec = tree.extension(UNSEEN, MODERN)
    assert spec.capability == ("extensions", UNSEEN)
    assert spec.settings is spec.models.WidgetsCapability
    assert spec.removes == ("completion/complete", "widgets/legacy") and spec.augments == ("tools/call",)
    assert "completion/complete" in tree.methods(MODERN) and "completion/complete" not in spec.apply(
        tree.methods(MODERN)
    )


def test_rows_of_an_unseen_extension(tree: ModuleType) -> None:
    spec = tree.extension(UNSEEN, MODERN)
    models = spec.models
    assert sorted(spec.methods) == ["notifications/widgets/changed", "tools/call", "widgets/get"]
    get = spec.methods["widgets/get"]
    assert (get.kind.value, get.direction.value) == ("request", "client_to_server")  # kind from its shape
    assert get.message is models.GetWidgetRequest and get.params is models.GetWidgetRequestParams
    assert get.result == (models.GetWidgetResult,) and get.name_param == "widgetId"
    gate = importlib.import_module("widgets_mcp._spec").Gate  # the unseen tree's own
    assert get.capability == gate("server", f"extensions.{UNSEEN}", keys=("extensions", UNSEEN))
    changed = spec.methods["notifications/widgets/changed"]
    assert (changed.kind.value, changed.direction.value, changed.result) == ("notification", "server_to_client", ())
    assert changed.capability is not None and changed.capability.side == "both"
    call = spec.methods["tools/call"]
    core_call = tree.methods(MODERN)["tools/call"]
    assert call.message is core_call.message and call.result == (*core_call.result, models.WidgetResult)
    assert dict(call.result_tags)["widget"] is models.WidgetResult
    widget = call.parse_result({"resultType": "widget", "widgetId": "w1"})
    assert isinstance(widget, models.WidgetResult) and widget.model_dump() == {"resultType": "widget", "widgetId": "w1"}
    assert isinstance(call.parse_result({"content": []}), dict(core_call.result_tags)["complete"])
    result = get.parse_result(
        {"resultType": "complete", "widget": {"widgetId": "w1", "size": 3, "maker": {"name": "m", "version": "1"}}}
    )
    assert result.widget.size == 3


def test_an_unseen_extension_reuses_what_it_repeats_alike(unseen: tuple[Unseen, str], tree: ModuleType) -> None:
    _, output = unseen
    spec = tree.extension(UNSEEN, MODERN)
    core_models = tree.module(MODERN).models
    table = importlib.import_module(spec.models.__name__.rsplit(".", 1)[0] + ".methods")
    assert spec.models.JSONRPCRequest is core_models.JSONRPCRequest, "alike: the core version's model"
    assert table.DIFFERS[0] == CHANGED and spec.models.Icon is not core_models.Icon
    icon = spec.models.Icon.model_validate({"src": "https://example.com/i.png", "dpi": 2})
    assert icon.dpi == 2
    with pytest.raises(ValidationError):
        spec.models.Icon.model_validate({"src": "https://example.com/i.png", "dpi": "2"})
    for name in ("Implementation", "Result"):  # alike, but referring to the changed def
        assert name in table.DIFFERS and getattr(spec.models, name) is not getattr(core_models, name)
    assert f"differ: {CHANGED} (and through them: " in output
    assert set(table.REUSED).isdisjoint(table.DIFFERS)


def test_an_unseen_extension_types_its_maps_as_its_core_version_does(tree: ModuleType) -> None:
    """Reused defs are whatever the core version's module defines (a model or a TypedDict), and
    the extension's own defs are decided around them: plain data all the way down, or a model."""
    spec = tree.extension(UNSEEN, MODERN)
    models, core_models = spec.models, tree.module(MODERN).models
    assert models.ToolAnnotations is core_models.ToolAnnotations and is_typeddict(models.ToolAnnotations)
    assert models.NotificationParams is core_models.NotificationParams
    assert issubclass(models.NotificationParams, BaseModel)
    assert is_typeddict(models.WidgetHints), "holds only plain data: a TypedDict"
    assert issubclass(models.WidgetNote, BaseModel), "holds a model: a model"
    raw = {
        "widgetId": "w1",
        "hints": {"annotations": {"readOnlyHint": True, "vendor": 1}, "colors": False},
        "note": {"params": {"_meta": {"k": 1}}},
        "label": {"title": "t"},
    }
    widget = models.Widget.model_validate(raw)
    assert widget.hints == raw["hints"] and widget.label == raw["label"]
    assert isinstance(widget.note, models.WidgetNote) and isinstance(widget.note.params, models.NotificationParams)
    assert widget.model_dump(mode="json") == raw
    with pytest.raises(ValidationError):
        models.Widget.model_validate({"widgetId": "w1", "hints": {"annotations": {"readOnlyHint": "yes"}}})


def test_methods_and_diff_read_an_unseen_extension(unseen: tuple[Unseen, str], tmp_path: Path) -> None:
    project, _ = unseen
    text = ok(*project.args("methods", UNSEEN))
    assert text.startswith(f"MCP extension {UNSEEN} ({RELEASE}) on {MODERN} (modern era), 3 methods")
    assert (
        "widgetId" in text
        and f"removes completion/complete, widgets/legacy ({MODERN} defines: completion/complete)" in text
    )
    record = json.loads(ok(*project.args("methods", UNSEEN, "--json")))
    assert record["extension"] == UNSEEN and record["differs"] == [CHANGED]
    assert [r["method"] for r in record["methods"]] == ["notifications/widgets/changed", "tools/call", "widgets/get"]

    against_core = invoke(*project.args("diff", MODERN, UNSEEN, "--exit-code"))
    assert against_core.exit_code == 1, against_core.output
    for line in ("+ widgets/get", "~ tools/call", "- completion/complete", f"~ {CHANGED}", "+ dpi: integer"):
        assert line in against_core.output, line
    assert "Defs: " in against_core.output and "+ Widget\n" in against_core.output

    changed = tmp_path / "next" / "schema.json"
    changed.parent.mkdir()
    changed.write_text(json.dumps(unseen_schema(project.core_schema, widget_field="weight")))
    files = invoke(*project.args("diff", str(project.ext_file), str(changed), "--extension", UNSEEN, "--exit-code"))
    assert files.exit_code == 1, files.output
    assert "~ Widget" in files.output and "+ weight: integer" in files.output and "- size: integer" in files.output
    same = ok(*project.args("diff", str(project.ext_file), str(project.ext_file), "--extension", UNSEEN))
    assert "the files are identical" in same
    reversed_order = invoke(*project.args("diff", UNSEEN, MODERN))
    assert reversed_order.exit_code == 1 and "the version first" in reversed_order.output


def tree_digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def test_extension_output_is_deterministic_cached_and_pruned(unseen: tuple[Unseen, str], tmp_path: Path) -> None:
    project, _ = unseen
    (pin,) = read_extension_pins(project.schemas)
    pins = {p.version: p.sha256 for p in read_pins(project.schemas)}
    first = generate(project.schemas, tmp_path / "a", [MODERN], project.data, extensions=[pin], pins=pins, jobs=1)
    assert [o.status for o in first.outcomes] == ["generated", "generated"]
    generate(project.schemas, tmp_path / "b", [MODERN], project.data, extensions=[pin], pins=pins, force=True)
    assert tree_digest(tmp_path / "a") == tree_digest(tmp_path / "b")
    again = generate(project.schemas, tmp_path / "a", [MODERN], project.data, extensions=[pin], pins=pins)
    assert [o.status for o in again.outcomes] == ["unchanged", "unchanged"] and not again.changed
    edited = tmp_path / "a" / "ext_widgets" / "v2026_07_28" / "methods.py"
    edited.write_text(edited.read_text() + "# edited\n")
    healed = generate(project.schemas, tmp_path / "a", [MODERN], project.data, extensions=[pin], pins=pins)
    assert [o.status for o in healed.outcomes] == ["unchanged", "generated"]
    assert tree_digest(tmp_path / "a") == tree_digest(tmp_path / "b")
    pruned = generate(project.schemas, tmp_path / "a", [MODERN], project.data, extensions=[], prune=True)
    assert pruned.removed == [f"{UNSEEN} on {MODERN}"]
    assert not (tmp_path / "a" / "ext_widgets").exists()
    assert UNSEEN not in (tmp_path / "a" / "versions.py").read_text()


def test_generate_refuses_an_extension_file_that_differs_from_its_pin(
    unseen: tuple[Unseen, str], tmp_path: Path
) -> None:
    project, _ = unseen
    schemas = tmp_path / "schema"
    shutil.copytree(project.schemas, schemas)
    moved = schemas / "extensions" / "widgets" / RELEASE / "schema.json"
    moved.write_text(moved.read_text() + "\n")
    args = ["generate", "--schema-dir", str(schemas), "--data-dir", str(project.data), "--out", str(tmp_path / "out")]
    result = invoke(*args)
    assert result.exit_code == 1 and "pinned at" in result.output
    assert f"--extension {UNSEEN} --update-pins" in result.output
    assert not (tmp_path / "out").exists()
    assert invoke(*args, "--no-pin-check").exit_code == 0


def test_a_pinned_extension_without_data_is_refused_in_one_line(unseen: tuple[Unseen, str], tmp_path: Path) -> None:
    project, _ = unseen
    result = invoke("generate", "--schema-dir", str(project.schemas), "--out", str(tmp_path / "out"))
    assert result.exit_code == 1  # mcpgen's own data has no entry for this extension
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and f"extension {UNSEEN} is pinned but has no entry in" in lines[0]


# -- sync --------------------------------------------------------------------------------------


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "pyproject.toml").write_text('[project]\nname = "userapp"\nversion = "0"\n')
    monkeypatch.chdir(root)
    for name in ("MCPGEN_SCHEMA_DIR", "MCPGEN_SCHEMA_SOURCE", "MCPGEN_EXT_SOURCE", "MCPGEN_RAW_BASE"):
        monkeypatch.delenv(name, raising=False)
    return root


@pytest.fixture
def ext_source(tmp_path: Path, schema_dir: Path) -> Path:
    """An extension source laid out as <name>/<release>/schema.json (as an extension repository's
    `schema/` folder is, per extension)."""
    for pin in read_extension_pins(schema_dir):
        target = tmp_path / "ext-source" / pin.name / pin.release / "schema.json"
        target.parent.mkdir(parents=True)
        shutil.copy(extension_file(schema_dir, pin), target)
    return tmp_path / "ext-source"


def test_sync_takes_extensions_from_an_extension_source(
    project: Path, ext_source: Path, schema_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ok("init")
    (pin,) = read_extension_pins(project / "schema")
    out = ok("sync", "--ext-from", str(ext_source), "--extension", pin.id)
    target = extension_file(project / "schema", pin)
    assert f"{pin.id}: copied (sha256 {pin.sha256[:12]}) -> {target.relative_to(project)}" in out
    assert target.read_bytes() == extension_file(schema_dir, pin).read_bytes()
    assert not (project / "schema" / MODERN).exists(), "only the extension asked for"
    monkeypatch.setenv("MCPGEN_EXT_SOURCE", str(ext_source))
    assert f"{pin.id}: unchanged" in ok("sync", "--extension", pin.id)


def test_a_synced_schema_folder_is_a_source_of_versions_and_extensions(project: Path, schema_dir: Path) -> None:
    ok("init")
    out = ok("sync", "--from", str(schema_dir))
    (pin,) = read_extension_pins(project / "schema")
    assert f"{MODERN}: copied" in out and f"{pin.id}: copied" in out
    assert extension_file(project / "schema", pin).is_file()


def test_a_changed_extension_is_refused_kept_for_review_and_repinned_as_printed(
    project: Path, ext_source: Path, schema_dir: Path
) -> None:
    ok("init")
    (pin,) = read_extension_pins(project / "schema")
    ok("sync", "--from", str(schema_dir), "--ext-from", str(ext_source))  # the review reads it on its version
    upstream = ext_source / pin.name / pin.release / "schema.json"
    doc = json.loads(upstream.read_text())
    doc["$defs"]["Gadget"] = {"type": "object", "properties": {"size": {"type": "integer"}}}
    upstream.write_text(json.dumps(doc))
    result = invoke("sync", "--ext-from", str(ext_source), "--extension", pin.id)
    assert result.exit_code == 1
    assert f"extension {pin.id} from {ext_source} has sha256" in result.output
    text = result.output.replace("\n", " ")
    review = text.split("review it with `", 1)[1].split("`", 1)[0]
    repin = text.split("re-pin with `", 1)[1].split("`", 1)[0]
    assert f"--extension {pin.id} --update-pins" in repin
    reviewed = CliRunner().invoke(main, review.split()[1:])
    assert reviewed.exit_code == 0, reviewed.output
    assert "Defs: 1 added, 0 removed, 0 changed" in reviewed.output and "+ Gadget" in reviewed.output
    repinned = CliRunner().invoke(main, repin.split()[1:])
    assert repinned.exit_code == 0, repinned.output
    assert f"{pin.id}: pinned" in repinned.output
    (now,) = read_extension_pins(project / "schema")
    assert now.sha256 == hashlib.sha256(upstream.read_bytes()).hexdigest() and now.commit == pin.commit
    assert not extension_file(project / "schema", pin).with_name("schema.json.new").exists()


def test_an_extension_pin_without_a_hash_is_pinned_on_request(project: Path, ext_source: Path) -> None:
    ok("init")
    pins_file = project / "schema" / "versions.toml"
    (pin,) = read_extension_pins(project / "schema")
    pins_file.write_text(pins_file.read_text().replace(pin.sha256, ""))
    refused = invoke("sync", "--ext-from", str(ext_source), "--extension", pin.id)
    assert refused.exit_code == 1 and f"extension {pin.id} is not pinned" in refused.output
    assert f"--extension {pin.id} --update-pins" in refused.output
    pinned = ok("sync", "--ext-from", str(ext_source), "--extension", pin.id, "--update-pins")
    assert f"{pin.id}: pinned" in pinned
    assert read_extension_pins(project / "schema") == [pin]


def test_an_unpinned_extension_id_says_how_to_pin_it(project: Path, ext_source: Path) -> None:
    ok("init")
    result = invoke("sync", "--ext-from", str(ext_source), "--extension", "com.example/none")
    assert result.exit_code == 1 and "add an [[extension]] entry" in result.output


@pytest.mark.parametrize(
    ("entry", "why"),
    [
        ('id = "x/y"\nname = "Bad-Name"\nrelease = "r"\nsha256 = ""', "`name` 'Bad-Name' is not"),
        ('id = "x/y"\nname = "ok"\nrelease = "../up"\nsha256 = ""', "`release` '../up' is not"),
        ('name = "ok"\nrelease = "r"\nsha256 = ""', "needs an `id`"),
    ],
)
def test_bad_extension_pins_are_refused(project: Path, entry: str, why: str) -> None:
    ok("init")
    pins_file = project / "schema" / "versions.toml"
    pins_file.write_text(pins_file.read_text() + f"\n[[extension]]\n{entry}\n")
    result = invoke("sync", "--version", MODERN, "--from", "nowhere")
    assert result.exit_code == 1 and why in result.output and "Traceback" not in result.output


def test_a_schema_source_without_the_extensions_says_where_they_come_from(
    project: Path, schema_dir: Path, tmp_path: Path
) -> None:
    ok("init")
    (tmp_path / "core-only" / MODERN).mkdir(parents=True)
    shutil.copy(schema_dir / MODERN / "schema.json", tmp_path / "core-only" / MODERN / "schema.json")
    result = invoke("sync", "--from", str(tmp_path / "core-only"), "--version", MODERN, "--extension", "x")
    assert result.exit_code == 1 and "add an [[extension]] entry" in result.output
    (pin,) = read_extension_pins(project / "schema")
    result = invoke("sync", "--from", str(tmp_path / "core-only"), "--version", MODERN, "--extension", pin.id)
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "cannot read" in lines[0] and "--ext-from or $MCPGEN_EXT_SOURCE" in lines[0]
