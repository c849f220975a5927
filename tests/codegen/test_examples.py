"""Every official example validates as the generated def it is named after and dumps back unchanged,
with no dump arguments: parse then dump gives back the wire message."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcpgen.generated.v2025_11_25 import models as m25
from mcpgen.generated.v2026_07_28 import models
from pydantic import BaseModel, TypeAdapter

EXAMPLES = Path(__file__).resolve().parents[2] / "schema" / "2026-07-28" / "examples"
FILES = sorted(EXAMPLES.glob("*/*.json"))


def test_examples_were_synced() -> None:
    assert len(FILES) > 100, f"expected the official examples under {EXAMPLES} (mcpgen sync copies them)"


def roundtrip(target: Any, data: Any) -> Any:
    if isinstance(target, type) and issubclass(target, BaseModel):
        return target.model_validate(data).model_dump(mode="json")
    # a named map of models (`InputRequests`) has no model_dump of its own: a plain TypeAdapter
    # dump, with no arguments, must write its models as sent too
    adapter: TypeAdapter[Any] = TypeAdapter(target)
    return adapter.dump_python(adapter.validate_python(data), mode="json")


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_example_roundtrips(path: Path) -> None:
    target = getattr(models, path.parent.name)
    data = json.loads(path.read_text(encoding="utf-8"))
    assert roundtrip(target, data) == data


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_example_roundtrips_from_json_text_with_no_dump_arguments(path: Path) -> None:
    target = getattr(models, path.parent.name)
    raw = path.read_text(encoding="utf-8")
    if isinstance(target, type) and issubclass(target, BaseModel):
        dumped = target.model_validate_json(raw).model_dump_json()
    else:
        adapter: TypeAdapter[Any] = TypeAdapter(target)
        dumped = adapter.dump_json(adapter.validate_json(raw)).decode()
    assert json.loads(dumped) == json.loads(raw)


def test_every_example_target_dumps_with_no_arguments() -> None:
    """The targets that are no model (the named maps of models, the TypedDicts) go through the
    no-argument TypeAdapter dumps above."""
    targets = {path.parent.name for path in FILES}
    maps = [
        t for t in targets if not (isinstance(getattr(models, t), type) and issubclass(getattr(models, t), BaseModel))
    ]
    assert {"InputRequests", "InputResponses"} <= set(maps)


def test_unset_optional_fields_are_never_written() -> None:
    result = models.CallToolResult(content=[models.TextContent(type="text", text="hi")])
    assert json.loads(result.model_dump_json()) == {"content": [{"type": "text", "text": "hi"}]}
    assert result.model_dump() == {"content": [{"type": "text", "text": "hi"}]}
    # defaults are still there to read, and written when asked for
    assert result.result_type == "complete"
    assert result.model_dump(exclude_unset=False)["resultType"] == "complete"


def test_assigned_fields_are_written() -> None:
    result = models.CallToolResult(content=[])
    result.is_error = True
    assert result.model_dump() == {"content": [], "isError": True}


def test_explicit_null_is_kept() -> None:
    # `Task.ttl` is `integer | null` and required in 2025-11-25: null is a value, not an absence
    raw = {
        "taskId": "t",
        "status": "working",
        "createdAt": "2025-01-01T00:00:00Z",
        "lastUpdatedAt": "2025-01-01T00:00:00Z",
        "ttl": None,
    }
    assert json.loads(m25.Task.model_validate_json(json.dumps(raw)).model_dump_json()) == raw
    # an optional field set to null on purpose is written as null
    assert models.CallToolResult(content=[], is_error=None).model_dump() == {"content": [], "isError": None}


def test_every_model_derives_from_the_shared_base() -> None:
    from mcpgen.generated._base import MCPModel

    exported = [getattr(models, name) for name in models.__all__]  # created on first access
    classes = [obj for obj in exported if isinstance(obj, type) and issubclass(obj, BaseModel)]
    assert len(classes) > 100
    assert all(issubclass(c, MCPModel) for c in classes)
