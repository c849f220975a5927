"""Build modified copies of a pinned schema in a temp folder: the "spec changed" scenarios.

Used by the generator tests (generate / methods / diff must report exactly the change) and by
the runtime tests (a method added by a future version is routable with no runtime edit).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

BASE = "2026-07-28"
FUTURE = "2027-01-15"

NEW_METHOD = "widgets/get"
REMOVED_METHOD = "completion/complete"
RENAMED = ("Annotations", "ContentAnnotations")
REMOVED_DEFS = ("CompleteRequest", "CompleteRequestParams", "CompleteResult", "CompleteResultResponse")
ADDED_DEFS = ("GetWidgetRequest", "GetWidgetRequestParams", "GetWidgetResult", "GetWidgetResultResponse")


def _rename_refs(node: Any, old: str, new: str) -> Any:
    if isinstance(node, dict):
        return {
            k: ("#/$defs/" + new if k == "$ref" and v == "#/$defs/" + old else _rename_refs(v, old, new))
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_rename_refs(v, old, new) for v in node]
    return node


def future_schema(base: dict[str, Any]) -> dict[str, Any]:
    """`base` (a 2026-07-28 schema) with one request added, one removed and one def renamed."""
    doc = json.loads(json.dumps(base))
    defs = doc["$defs"]
    # 1. a new client request with its params, result and response pairing
    defs["GetWidgetRequestParams"] = {
        "type": "object",
        "properties": {
            "_meta": {"$ref": "#/$defs/RequestMetaObject"},
            "widgetId": {"type": "string"},
            "size": {"type": "integer"},
        },
        "required": ["_meta", "widgetId"],
    }
    defs["GetWidgetRequest"] = {
        "type": "object",
        "properties": {
            "jsonrpc": {"const": "2.0", "type": "string"},
            "id": {"$ref": "#/$defs/RequestId"},
            "method": {"const": NEW_METHOD, "type": "string"},
            "params": {"$ref": "#/$defs/GetWidgetRequestParams"},
        },
        "required": ["jsonrpc", "id", "method", "params"],
    }
    defs["GetWidgetResult"] = {
        "type": "object",
        "properties": {
            "_meta": {"$ref": "#/$defs/ResultMetaObject"},
            "resultType": {"type": "string"},
            "widget": {"type": "string"},
            "colour": {"type": "string"},
        },
        "required": ["resultType", "widget"],
    }
    defs["GetWidgetResultResponse"] = {
        "type": "object",
        "properties": {
            "jsonrpc": {"const": "2.0", "type": "string"},
            "id": {"$ref": "#/$defs/RequestId"},
            "result": {"$ref": "#/$defs/GetWidgetResult"},
        },
        "required": ["jsonrpc", "id", "result"],
    }
    defs["ClientRequest"]["anyOf"].append({"$ref": "#/$defs/GetWidgetRequest"})
    # 2. a removed request (and every union branch that named its defs)
    gone = [{"$ref": "#/$defs/" + name} for name in REMOVED_DEFS]
    for node in defs.values():
        if isinstance(node.get("anyOf"), list):
            node["anyOf"] = [b for b in node["anyOf"] if b not in gone]
    for name in REMOVED_DEFS:
        del defs[name]
    # 3. a renamed def
    old, new = RENAMED
    defs[new] = defs.pop(old)
    doc["$defs"] = _rename_refs(defs, old, new)
    return doc


def write_schema(root: Path, version: str, doc: dict[str, Any]) -> Path:
    path = root / version / "schema.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    return path


def make_future_schema_dir(root: Path, source_dir: Path) -> Path:
    """`root/<BASE>/schema.json` (unchanged) and `root/<FUTURE>/schema.json` (changed)."""
    base = json.loads((source_dir / BASE / "schema.json").read_text(encoding="utf-8"))
    write_schema(root, BASE, base)
    write_schema(root, FUTURE, future_schema(base))
    return root


def to_draft07(doc: dict[str, Any]) -> dict[str, Any]:
    """The same schema written as draft-07: `definitions` and `#/definitions/...` refs."""
    text = json.dumps(doc["$defs"]).replace('"#/$defs/', '"#/definitions/')
    return {"$schema": "http://json-schema.org/draft-07/schema#", "definitions": json.loads(text)}
