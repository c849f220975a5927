"""The official SDK's HTTP client (`mcp` 2.3.0) against mcpgen's HTTP server, in both eras and in auto
mode: tools, progress, elicitation (server->client requests in the handshake era, input-required
results in the modern era) and a multi-round call. The official client runs on asyncio."""

from __future__ import annotations

from typing import Any

import pytest
from mcpgen.runtime import RequestContext, Sealing, Server
from mcpgen.runtime.protocol.input_requests import elicit
from support.live import live

pytestmark = pytest.mark.anyio
EXPECTED = {"auto": "2026-07-28", "handshake": "2025-11-25", "2026-07-28": "2026-07-28"}


def official_mode(mode: str) -> str:
    """The official client's name for a mode (it calls the handshake era `legacy`)."""
    return "legacy" if mode == "handshake" else mode


NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
COLOR = {"type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]}


def make_server() -> Server:
    server = Server("interop", "1.0", sealing=Sealing(keys=[b"i" * 32]))

    @server.tool()
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool()
    async def count(ctx: RequestContext, n: int) -> str:
        for i in range(1, n + 1):
            await ctx.report_progress(i, n)
        return f"counted {n}"

    @server.tool()
    async def greet(ctx: RequestContext) -> str:
        answer = ctx.input_response("who")
        if answer is None:
            return ctx.input_required(who=elicit("Your name?", NAME))
        return f"Hello, {answer.content['name']}!"

    @server.tool()
    async def two_rounds(ctx: RequestContext) -> str:
        if isinstance(ctx.state, dict) and ctx.input_response("color") is not None:
            return f"{ctx.state['name']} likes {ctx.input_response('color').content['color']}"
        if ctx.input_response("name") is not None:
            return ctx.input_required(
                state={"name": ctx.input_response("name").content["name"]}, color=elicit("Color?", COLOR)
            )
        return ctx.input_required(name=elicit("Name?", NAME))

    return server


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize("mode", list(EXPECTED))
async def test_official_http_client_against_our_server(mode: str, anyio_backend: str) -> None:
    from mcp import Client as OfficialClient
    from mcp.types import ElicitResult

    asked: list[str] = []

    async def elicitation(context: Any, params: Any) -> ElicitResult:
        asked.append(params.message)
        if "Color" in params.message:
            return ElicitResult(action="accept", content={"color": "green"})
        return ElicitResult(action="accept", content={"name": "Ada"})

    async with (
        live(make_server()) as (url, _),
        OfficialClient(url, mode=official_mode(mode), elicitation_callback=elicitation) as client,
    ):
        assert client.session.protocol_version == EXPECTED[mode]
        tools = await client.list_tools()
        assert {t.name for t in tools.tools} == {"add", "count", "greet", "two_rounds"}
        assert (await client.call_tool("add", {"a": 2, "b": 40})).structured_content == {"result": 42}
        progress: list[float] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append(value)

        counted = await client.call_tool("count", {"n": 3}, progress_callback=on_progress)
        assert counted.content[0].text == "counted 3" and progress == [1, 2, 3]
        assert (await client.call_tool("greet", {})).content[0].text == "Hello, Ada!"
        assert (await client.call_tool("two_rounds", {})).content[0].text == "Ada likes green"
    assert asked == ["Your name?", "Name?", "Color?"]
