"""Interop with the official Python SDK (`mcp` from PyPI) over stdio, in both directions and every
negotiation mode: list and call everything, and check the negotiated version on both sides."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from mcpgen.runtime import Client, InputHandlers, Timeouts

pytestmark = pytest.mark.anyio
SUPPORT = Path(__file__).resolve().parents[2] / "support"
REPO = SUPPORT.parent.parent
OFFICIAL_SERVER = SUPPORT / "official_server.py"
OUR_SERVER = REPO / "examples" / "everything_server.py"
EXPECTED = {"auto": "2026-07-28", "handshake": "2025-11-25", "2026-07-28": "2026-07-28"}
# Our client's timeouts against a server in a child process. Its start is the box's time, not the
# peer's: a fresh interpreter importing the official SDK takes about 1 s idle but 24-33 s at a load
# of 25-33 on 2 cores, past a 30 s start-up deadline (the probe, `initialize`, or a modern pin's first
# call timed out before the server had read a line). So the start has a bound of its own, wide enough
# for a loaded box, that only a server that never starts reaches; once the server has answered, each
# request keeps the 30 s that measures the peer (it answers in well under a second even then).
TIMEOUTS = Timeouts(request=30, startup=240)


def official_mode(mode: str) -> str:
    """The official client's name for a mode (it calls the handshake era `legacy`)."""
    return "legacy" if mode == "handshake" else mode


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.mark.parametrize("mode", list(EXPECTED))
async def test_our_client_against_the_official_server(mode: str) -> None:
    async with Client([sys.executable, str(OFFICIAL_SERVER)], mode=mode, timeouts=TIMEOUTS) as client:
        assert client.protocol_version == EXPECTED[mode]
        if mode != "2026-07-28":
            assert client.server_info is not None and client.server_info["name"] == "official-peer"
            assert client.instructions == "served by the official SDK"
        tools = {t.name: t async for t in client.tools()}
        assert set(tools) == {"add", "echo", "protocol_info"}
        assert (await client.call_tool("add", {"a": 2, "b": 40})).structured_content == {"result": 42}
        assert (await client.call_tool("echo", {"text": "hi"})).content[0].text == "hi"
        served = await client.call_tool("protocol_info")
        assert served.content[0].text == EXPECTED[mode], "the server saw the version we negotiated"
        prompts = [p async for p in client.prompts()]
        assert [p.name for p in prompts] == ["greet"]
        prompt = await client.get_prompt("greet", {"name": "Ada"})
        assert prompt.messages[0].content.text == "Hello Ada"
        assert [r.uri async for r in client.resources()] == ["peer://static"]
        assert [t.uri_template async for t in client.resource_templates()] == ["peer://items/{item_id}"]
        assert (await client.read_resource("peer://static")).contents[0].text == "static text"
        assert (await client.read_resource("peer://items/9")).contents[0].text == "item 9"


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # the official client runs on asyncio
@pytest.mark.parametrize("mode", list(EXPECTED))
async def test_official_client_against_our_server(mode: str, anyio_backend: str) -> None:
    from mcp import Client as OfficialClient
    from mcp import StdioServerParameters
    from mcp.types import PromptReference

    params = StdioServerParameters(command=sys.executable, args=[str(OUR_SERVER)])
    async with OfficialClient(params, mode=official_mode(mode)) as client:
        assert client.session.protocol_version == EXPECTED[mode]
        names: list[str] = []
        cursor = None
        while True:
            page = await client.list_tools(cursor=cursor)
            names += [t.name for t in page.tools]
            cursor = page.next_cursor
            if not cursor:
                break
        assert {"echo", "add", "area", "long_task", "fail", "protocol_info"} <= set(names)
        info = await client.call_tool("protocol_info", {})
        served: dict[str, Any] = info.structured_content or json.loads(info.content[0].text)
        assert served["protocol_version"] == EXPECTED[mode]
        assert served["modern"] is (EXPECTED[mode] == "2026-07-28")
        assert (await client.call_tool("add", {"a": 1, "b": 2})).structured_content == {"result": 3}
        area = await client.call_tool("area", {"width": 2, "height": 3})
        assert area.structured_content == {"square_metres": 6.0, "perimeter": 10.0}
        failed = await client.call_tool("fail", {})
        assert failed.is_error is True
        progress: list[float] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append(value)

        done = await client.call_tool("long_task", {"steps": 2}, progress_callback=on_progress)
        assert done.content[0].text == "finished 2 steps"
        assert progress == [1, 2]
        prompts = await client.list_prompts()
        assert {p.name for p in prompts.prompts} == {"write_poem", "review_code"}
        poem = await client.get_prompt("write_poem", {"topic": "tea"})
        assert "tea" in poem.messages[0].content.text
        resources = await client.list_resources()
        assert {r.uri for r in resources.resources} == {"mem://readme", "mem://counter", "mem://logo"}
        templates = await client.list_resource_templates()
        assert {t.uri_template for t in templates.resource_templates} == {
            "mem://greeting/{name}",
            "mem://files/{+path}",
        }
        greeting = await client.read_resource("mem://greeting/Bo")
        assert greeting.contents[0].text == "Hello, Bo!"
        nested = await client.read_resource("mem://files/a/b.txt")
        assert nested.contents[0].text == "contents of a/b.txt"
        completion = await client.complete(
            PromptReference(type="ref/prompt", name="review_code"), {"name": "language", "value": "ja"}
        )
        assert completion.completion.values == ["java"]


# -- multi-round-trip requests: elicitation, sampling and roots ---------------------------------

OFFICIAL_MRTR_SERVER = SUPPORT / "official_mrtr_server.py"


async def _elicit(params: Any) -> dict[str, Any]:
    return {"action": "accept", "content": {"ok": True}}


async def _sample(params: Any) -> dict[str, Any]:
    text = params.messages[0].content.text
    return {"role": "assistant", "content": {"type": "text", "text": f"re: {text}"}, "model": "fake-model"}


@pytest.mark.parametrize("mode", ["auto", "handshake"])
async def test_our_client_answers_an_official_server_that_asks_for_input(mode: str) -> None:
    async with Client(
        [sys.executable, str(OFFICIAL_MRTR_SERVER)],
        mode=mode,
        timeouts=TIMEOUTS,
        inputs=InputHandlers(elicitation=_elicit, sampling=_sample, roots=[{"uri": "file:///work", "name": "work"}]),
    ) as client:
        assert client.protocol_version == EXPECTED[mode]
        assert (await client.call_tool("delete", {"item": "a.txt"})).content[
            0
        ].text == "deleted a.txt (ok=True, note=none)"
        assert (await client.call_tool("ask_llm")).content[0].text == "model said: re: Say hi"
        assert (await client.call_tool("workspace")).content[0].text == "file:///work"


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize("mode", ["auto", "handshake"])
async def test_official_client_answers_our_server_that_asks_for_input(mode: str, anyio_backend: str) -> None:
    from mcp import Client as OfficialClient
    from mcp import StdioServerParameters
    from mcp.types import CreateMessageResult, ElicitResult, ListRootsResult, Root, TextContent

    asked: list[str] = []

    async def elicitation(context: Any, params: Any) -> ElicitResult:
        asked.append(f"elicit:{params.message}")
        if "nights" in str(params.requested_schema):
            return ElicitResult(action="accept", content={"nights": 3})
        return ElicitResult(action="accept", content={"confirm": True})

    async def sampling(context: Any, params: Any) -> CreateMessageResult:
        asked.append("sample")
        return CreateMessageResult(role="assistant", content=TextContent(type="text", text="short"), model="fake")

    async def roots(context: Any) -> ListRootsResult:
        asked.append("roots")
        return ListRootsResult(roots=[Root(uri="file:///trips", name="trips")])

    params = StdioServerParameters(command=sys.executable, args=[str(OUR_SERVER)])
    async with OfficialClient(
        params,
        mode=official_mode(mode),
        elicitation_callback=elicitation,
        sampling_callback=sampling,
        list_roots_callback=roots,
    ) as client:
        assert client.session.protocol_version == EXPECTED[mode]
        confirmed = await client.call_tool("confirm_action", {"action": "deploy"})
        assert confirmed.content[0].text == "deploy: confirmed ((none given))", "the server filled the default"
        summary = await client.call_tool("summarize", {"text": "a long story"})
        assert summary.content[0].text == "summary: short"
        listed = await client.call_tool("client_roots", {})
        assert [block.text for block in listed.content] == ["file:///trips"]  # a list of strings is text content
        trip = await client.call_tool("plan_trip", {"city": "Lyon"})
        assert trip.structured_content == {"city": "Lyon", "nights": 3, "ideas": "short", "save_to": ["file:///trips"]}
    assert asked.count("roots") == 2 and asked.count("sample") == 2
