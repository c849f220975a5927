"""mcpgen's HTTP client against mcpgen's own HTTP server, served for real (uvicorn on asyncio,
hypercorn on trio) on a loopback port: each negotiation mode, progress, input (server requests on
the call's stream in the handshake era, multi-round trips in the modern one), a tool whose
arguments travel in headers, cancellation, and the end of the session."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

import anyio
import pytest
from mcpgen.runtime import Client, InputHandlers, RequestContext, Server, Timeouts, mcp_header
from mcpgen.runtime.protocol.input_requests import elicit
from mcpgen.runtime.server.http.run import bind, serve_http

pytestmark = pytest.mark.anyio
EXPECTED = {"auto": "2026-07-28", "handshake": "2025-11-25", "2026-07-28": "2026-07-28"}


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def make_server(started: anyio.Event, cancelled: anyio.Event) -> Server:
    server = Server("own-http-peer")

    @server.tool()
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool()
    async def count(ctx: RequestContext, n: int) -> str:
        for i in range(1, n + 1):
            await ctx.report_progress(i, n)
        return f"counted {n}"

    @server.tool()
    async def ask(ctx: RequestContext, item: str) -> str:
        named = ctx.input_response("name")
        if named is None and ctx.state is None:
            schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
            return ctx.input_required(name=elicit("Your name?", schema))
        name = named.content["name"] if named is not None else ctx.state["name"]
        colour = ctx.input_response("colour")
        if colour is None:  # the second question needs the first answer: a second round
            schema = {"type": "object", "properties": {"colour": {"type": "string"}}, "required": ["colour"]}
            return ctx.input_required(colour=elicit(f"{name}, your colour?", schema), state={"name": name})
        return f"{name} likes {colour.content['colour']} {item}s"

    @server.tool()
    def regional(region: Annotated[str, mcp_header("Region")], query: str) -> str:
        return f"{query} in {region}"

    @server.tool()
    async def wait(ctx: RequestContext) -> str:
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()
        return "never"

    return server


@asynccontextmanager
async def served(server: Server) -> AsyncIterator[str]:
    sock = bind("127.0.0.1", 0)
    stop = anyio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: serve_http(server.http_app(), sockets=[sock], shutdown=stop))
        try:
            yield f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
        finally:
            stop.set()
    sock.close()


async def answer(params: Any) -> dict[str, Any]:
    return {"action": "accept", "content": {"name": "Ada"} if "name" in params.message else {"colour": "blue"}}


@pytest.mark.parametrize("mode", list(EXPECTED))
async def test_our_client_against_our_http_server(mode: str) -> None:
    started, cancelled = anyio.Event(), anyio.Event()
    progress: list[float] = []
    server = make_server(started, cancelled)
    async with (
        served(server) as url,
        Client(url, mode=mode, inputs=InputHandlers(elicitation=answer), timeouts=Timeouts(request=30)) as client,
    ):
        assert client.protocol_version == EXPECTED[mode]
        assert {t.name async for t in client.tools()} == {"add", "count", "ask", "regional", "wait"}
        assert (await client.call_tool("add", {"a": 2, "b": 40})).structured_content == {"result": 42}
        counted = await client.call_tool("count", {"n": 3}, progress=lambda done, total, note: progress.append(done))
        assert counted.content[0].text == "counted 3" and progress == [1.0, 2.0, 3.0]
        asked = await client.call_tool("ask", {"item": "bike"})  # two rounds, or two server requests
        assert asked.content[0].text == "Ada likes blue bikes"
        found = await client.call_tool("regional", {"region": "Zürich", "query": "lakes"})
        assert found.content[0].text == "lakes in Zürich"
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.call_tool, "wait")
            await started.wait()
            tg.cancel_scope.cancel()
        with anyio.fail_after(10):
            await cancelled.wait()  # the server stopped the handler: a closed stream, or notifications/cancelled
        assert (await client.call_tool("add", {"a": 1, "b": 1})).structured_content == {"result": 2}


async def test_a_call_before_any_listing_gets_its_header_after_one_retry() -> None:
    async with served(make_server(anyio.Event(), anyio.Event())) as url, Client(url) as client:
        found = await client.call_tool("regional", {"region": "eu", "query": "q"})  # the server checks Mcp-Param-Region
        assert found.content[0].text == "q in eu"
