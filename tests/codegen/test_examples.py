"""Every official example validates as the generated def it is named after and dumps back unchanged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcpgen.generated.v2026_07_28 import models
from pydantic import BaseModel, TypeAdapter

EXAMPLES = Path(__file__).resolve().parents[2] / "schema" / "2026-07-28" / "examples"
FILES = sorted(EXAMPLES.glob("*/*.json"))


def test_examples_were_synced() -> None:
    assert len(FILES) > 100, f"expected the official examples under {EXAMPLES} (mcpgen sync copies them)"


def roundtrip(target: Any, data: Any) -> Any:
    if isinstance(target, type) and issubclass(target, BaseModel):
        return target.model_validate(data).model_dump(mode="json", by_alias=True, exclude_unset=True)
    adapter: TypeAdapter[Any] = TypeAdapter(target)
    return adapter.dump_python(adapter.validate_python(data), mode="json", by_alias=True, exclude_unset=True)


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_example_roundtrips(path: Path) -> None:
    target = getattr(models, path.parent.name)
    data = json.loads(path.read_text(encoding="utf-8"))
    assert roundtrip(target, data) == data


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_example_roundtrips_from_json_text(path: Path) -> None:
    target = getattr(models, path.parent.name)
    raw = path.read_text(encoding="utf-8")
    if isinstance(target, type) and issubclass(target, BaseModel):
        dumped = target.model_validate_json(raw).model_dump_json(by_alias=True, exclude_unset=True)
    else:
        adapter: TypeAdapter[Any] = TypeAdapter(target)
        dumped = adapter.dump_json(adapter.validate_json(raw), by_alias=True, exclude_unset=True).decode()
    assert json.loads(dumped) == json.loads(raw)
