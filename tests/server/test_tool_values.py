"""How a tool's arguments and structured output are read on the call path: the shortcuts (the
arguments checked as Python values, a plain scalar output taken without the schema check, the
text of structured content) give what the long way gives, and are not taken where they would not."""

from __future__ import annotations

import datetime
import enum
import json
from typing import Annotated, Any, Optional, Union

import pydantic
import pydantic_core
import pytest
from mcpgen.runtime import Server
from mcpgen.runtime.server.features.common import json_text
from mcpgen.runtime.server.features.tools import tool_result
from pydantic import BaseModel, Field, WithJsonSchema
from support.peers import connected

V26_MODE = "auto"


class Colour(enum.Enum):
    RED = "red"


class Point(BaseModel):
    x: int


def native(
    a: int,
    f: float = 1.0,
    s: str = "",
    b: bool = False,
    o: Optional[int] = None,  # noqa: UP045 - the typing spelling on purpose
    u: Union[int, str] = 0,  # noqa: UP007 - the typing spelling on purpose
    n: int | None = None,
    items: list[int] | None = None,
    table: dict[str, Any] | None = None,
    bare: list = [],  # noqa: B006 - a default, never mutated
    anything: Any = None,
    bounded: Annotated[int, Field(ge=0)] = 0,
) -> int:
    return a


def make_server() -> Server:
    server = Server("values")
    server.add_tool(native)

    @server.tool()
    def when(day: datetime.date) -> str:
        return day.isoformat()

    @server.tool()
    def pair(both: tuple[int, int]) -> int:
        return sum(both)

    @server.tool()
    def colour(c: Colour) -> str:
        return c.value

    @server.tool()
    def point(p: Point, k: int = 0) -> int:  # a nested model (one parameter of two)
        return p.x + k

    @server.tool()
    def points(ps: list[Point], k: int = 0) -> int:
        return len(ps) + k

    @server.tool()
    def whole(p: Point) -> int:  # one model parameter: the whole arguments object
        return p.x

    @server.tool()
    def number() -> int:
        return 3

    @server.tool()
    def flag() -> bool:
        return True

    @server.tool()
    def other_schema() -> Annotated[int, WithJsonSchema({"type": "string"})]:
        return 3

    return server


def test_only_json_native_parameters_are_checked_as_python_values() -> None:
    tools = make_server().tools
    assert tools["native"].python_arguments
    for name in ("when", "pair", "colour", "point", "points", "whole"):
        assert not tools[name].python_arguments, name


INPUTS: list[dict[str, Any]] = [
    {"a": 1},
    {"a": True},
    {"a": 1.0},
    {"a": "1"},
    {"a": 2**70},
    {"a": 1, "f": 2},
    {"a": 1, "f": True},
    {"a": 1, "f": "1.5"},
    {"a": 1, "s": 1},
    {"a": 1, "b": 1},
    {"a": 1, "b": "true"},
    {"a": 1, "o": None},
    {"a": 1, "u": 1.5},
    {"a": 1, "u": "x"},
    {"a": 1, "n": "2"},
    {"a": 1, "items": [1, True]},
    {"a": 1, "items": [1, 2]},
    {"a": 1, "table": {"x": [1, {"y": None}]}},
    {"a": 1, "bare": [1, "x", None]},
    {"a": 1, "anything": {"k": [1.5]}},
    {"a": 1, "bounded": -1},
    {"a": 1, "extra": 5},
    {},
]


@pytest.mark.parametrize("given", INPUTS, ids=[json.dumps(i) for i in INPUTS])
def test_json_native_arguments_read_the_same_as_python_values_and_as_json_text(given: dict[str, Any]) -> None:
    model = make_server().tools["native"].arguments
    outcomes = []
    for read in (
        lambda: model.model_validate(pydantic_core.from_json(pydantic_core.to_json(given)), strict=True),
        lambda: model.model_validate_json(pydantic_core.to_json(given), strict=True),
    ):
        try:
            outcomes.append(read().__dict__)
        except pydantic.ValidationError as exc:
            outcomes.append([(e["type"], e["loc"]) for e in exc.errors()])
    assert outcomes[0] == outcomes[1]


@pytest.mark.anyio
async def test_arguments_in_their_json_form_are_read_as_json() -> None:
    """A date, a tuple, an enum and nested models arrive as JSON (a string, an array, a value,
    objects): read as JSON text they are accepted; as strict Python values they would not be."""
    async with connected(make_server(), mode=V26_MODE) as client:
        assert (await client.call_tool("when", {"day": "2026-07-28"})).content[0].text == "2026-07-28"
        assert (await client.call_tool("pair", {"both": [1, 2]})).structured_content == {"result": 3}
        assert (await client.call_tool("colour", {"c": "red"})).content[0].text == "red"
        assert (await client.call_tool("point", {"p": {"x": 4}})).structured_content == {"result": 4}
        assert (await client.call_tool("points", {"ps": [{"x": 4}]})).structured_content == {"result": 1}
        assert (await client.call_tool("whole", {"x": 5})).structured_content == {"result": 5}
        refused = await client.call_tool("native", {"a": "7"})
        assert refused.is_error and "invalid arguments for tool native" in refused.content[0].text


def test_a_plain_scalar_output_is_taken_without_the_schema_check() -> None:
    tools = make_server().tools
    assert tools["number"].plain_output is int
    assert tools["flag"].plain_output is bool
    assert tools["other_schema"].plain_output is str  # what its schema says, not what it returns
    assert tool_result(tools["number"], 3) == {
        "content": [{"type": "text", "text": '{"result": 3}'}],
        "structuredContent": {"result": 3},
    }
    refused = tool_result(tools["other_schema"], 3)  # an int is not what the schema takes as it is: checked
    assert refused["isError"] is True
    assert "does not match its outputSchema" in refused["content"][0]["text"]


def test_a_plain_output_type_with_a_serializer_of_its_own_is_dumped_through_it() -> None:
    """Only an output type that is nothing but int, str or bool dumps a value to itself: one with
    a serializer (the same JSON schema) still goes through it."""
    server = Server("serialized")

    @server.tool()
    def doubled() -> Annotated[int, pydantic.PlainSerializer(lambda value: value * 2, return_type=int)]:
        return 3

    def shouted() -> Annotated[str, pydantic.PlainSerializer(str.upper, return_type=str)]:
        return "hi"

    server.add_tool(shouted, structured_output=True)  # (a str return is text unless asked)
    doubled_tool, shouted_tool = server.tools["doubled"], server.tools["shouted"]
    assert (doubled_tool.plain_output, shouted_tool.plain_output) == (int, str)
    assert (doubled_tool.plain_dump, shouted_tool.plain_dump) == (None, None)
    assert tool_result(doubled_tool, 3) == {
        "content": [{"type": "text", "text": '{"result": 6}'}],
        "structuredContent": {"result": 6},
    }
    assert tool_result(shouted_tool, "hi")["structuredContent"] == {"result": "HI"}
    assert make_server().tools["number"].plain_dump is int


@pytest.mark.parametrize(
    ("kind", "value"),
    [
        (int, 3),
        (int, -(10**30)),
        (int, 0),
        (bool, True),
        (bool, False),
        (str, ""),
        (str, 'é"\n\t\\ \u2603\U0001f600\x00'),
    ],
)
def test_a_plain_scalar_output_reads_as_the_structured_content_written_by_json_dumps(kind: type, value: Any) -> None:
    server = Server("plain")

    def plain() -> Any:
        return value

    plain.__annotations__["return"] = kind
    server.add_tool(plain, structured_output=True)
    tool = server.tools["plain"]
    assert tool.plain_output is kind
    result = tool_result(tool, value)
    assert result == {
        "content": [{"type": "text", "text": json.dumps({"result": value}, ensure_ascii=False)}],
        "structuredContent": {"result": value},
    }
    assert type(result["structuredContent"]["result"]) is kind


@pytest.mark.parametrize(
    "value",
    [
        {"result": 3},
        {"a": [1, 2.5, None, True, 'é"\n\t\\'], "b": {}},
        "text",
        10**30,
        1e300,
        [],
        {"x": {"y": [{}]}},
        {"\u2603": "\U0001f600"},
    ],
)
def test_structured_text_is_json_dumps(value: Any) -> None:
    assert json_text(value) == json.dumps(value, ensure_ascii=False)
