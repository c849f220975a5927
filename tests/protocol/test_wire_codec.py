"""With orjson installed, the wire codec writes what pydantic-core alone writes: JSON that reads back
as the same values (integers of any size stay integers, floats floats, NaN null); what orjson
cannot write the same way (subclasses, big integers, other keys, dataclasses, bytes) is written
by pydantic-core, and what neither can write fails as before (hypothesis)."""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from typing import Any

import pydantic_core
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcpgen.runtime.protocol import wire

pytest.importorskip("orjson")  # (installed by the `http` extra; without it the codec is pydantic-core's)


def _reference_loads(data: bytes) -> Any:
    return pydantic_core.from_json(data)


def _reference_dumps(value: object) -> bytes:
    return pydantic_core.to_json(value, inf_nan_mode="null", by_alias=True)


def _same(a: Any, b: Any) -> bool:
    """Equal values of the same JSON types (1 and 1.0 differ; NaN equals NaN)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=25,
)


def test_plain_messages_are_written_by_orjson(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> bytes:
        raise AssertionError("a plain message went to pydantic-core")

    monkeypatch.setattr(wire.pydantic_core, "to_json", refuse)
    message = {"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "é"}], "n": 1.5, "ok": True}}
    assert _reference_loads(wire.dumps(message)) == message


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_what_is_written_reads_back_as_pydantic_core_writes_it(value: Any) -> None:
    written = wire.dumps(value)
    assert _same(_reference_loads(written), _reference_loads(_reference_dumps(value)))


class Colour(str, enum.Enum):
    RED = "red"


@dataclass
class Point:
    x: int


class Tagged(dict[str, Any]):
    pass


@pytest.mark.parametrize(
    "value",
    [
        {"big": 2**70},
        {1: "int key"},
        {"colour": Colour.RED},
        {"point": Point(1)},
        {"bytes": b"raw"},
        Tagged(a=1),
        {"nan": math.nan, "inf": -math.inf},
        {"text": "é\u2028\U0001f600"},
    ],
    ids=repr,
)
def test_values_orjson_leaves_alone_are_written_as_pydantic_core_writes_them(value: object) -> None:
    assert _same(_reference_loads(wire.dumps(value)), _reference_loads(_reference_dumps(value)))


def test_what_cannot_be_written_fails_as_before() -> None:
    with pytest.raises(ValueError):  # a lone surrogate: pydantic-core's serialisation error
        wire.dumps({"a": "\ud800"})
