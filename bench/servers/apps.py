"""The servers every benchmark runs: the same three tools, built with mcpgen and with the official SDK.

- `add(a, b)`: a plain `def` (a sync tool);
- `add_async(a, b)`: an `async def` (an async tool), the same work;
- `where()`: a plain `def` that says where its library ran it: "event loop thread" (the tool ran
  on the loop, blocking it meanwhile) or "worker thread" (the library handed it to a thread).
  Benchmarks call it once and print the answer next to each sync-tool figure.

In process: `ours_server()`, `official_server()`. As ASGI apps for `uvicorn --factory` (with
`--app-dir bench/servers`): `mcpgen_app`, `official_sse` (the official server's defaults: SSE
answers), `official_json` (`json_response=True`) and `empty` (an app that reads the request and
answers a fixed JSON-RPC result: the ceiling of the stack it runs on). For several workers, mcpgen
is served by its own factory: `MCPGEN_SERVER=bench/servers/apps.py:ours_server`.
"""

from __future__ import annotations

import asyncio
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer
    from mcpgen.runtime import Server

TOOL_NAMES = {"sync": "add", "async": "add_async"}


def add(a: int, b: int) -> int:
    return a + b


async def add_async(a: int, b: int) -> int:
    return a + b


def where() -> str:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return "worker thread" if threading.current_thread() is not threading.main_thread() else "no event loop"
    return "event loop thread"


TOOLS = (add, add_async, where)


def ours_server(**options: Any) -> Server:
    from mcpgen.runtime import Server, ServerAdvertising

    server = Server("bench", advertising=ServerAdvertising(logging=False), **options)
    for tool in TOOLS:
        server.add_tool(tool)
    return server


def official_server() -> MCPServer:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("bench")
    for tool in TOOLS:
        server.tool()(tool)
    return server


def mcpgen_app() -> Any:
    return ours_server().http_app()


def official_sse() -> Any:
    return official_server().streamable_http_app()


def official_json() -> Any:
    return official_server().streamable_http_app(json_response=True)


EMPTY_BODY = (
    b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"3"}],"structuredContent":{"result":3}}}'
)
EMPTY_HEADERS = [(b"content-type", b"application/json"), (b"mcp-session-id", b"empty")]


async def _empty(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["type"] != "http":
        return
    more = True
    while more:
        more = (await receive()).get("more_body", False)
    await send({"type": "http.response.start", "status": 200, "headers": EMPTY_HEADERS})
    await send({"type": "http.response.body", "body": EMPTY_BODY})


def empty() -> Any:
    return _empty
