"""The servers every benchmark runs: the same three tools, built with mcpgen and with the official SDK.

- `add(a, b)`: a plain `def` (a sync tool);
- `add_async(a, b)`: an `async def` (an async tool), the same work;
- `where()`: a plain `def` that says where its library ran it: "event loop thread" (the tool ran
  on the loop, blocking it meanwhile) or "worker thread" (the library handed it to a thread).
  Benchmarks call it once and print the answer next to each sync-tool figure.

In process: `ours_server()`, `official_server()`. As ASGI apps for `uvicorn --factory` (with
`--app-dir bench/servers`): `mcpgen_app`, `official_sse` (the official server's defaults: SSE
answers), `official_json` (`json_response=True`) and `empty` (an app that reads the request and
answers a fixed JSON-RPC result: the ceiling of the stack it runs on) and `floor` (the least any
validating MCP server does per call, below). For several workers, mcpgen
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
EMPTY_HEADERS = [  # with the length, as every server here sends it: the answer is not chunked
    (b"content-type", b"application/json"),
    (b"content-length", b"%d" % len(EMPTY_BODY)),
    (b"mcp-session-id", b"empty"),
]


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


# -- the floor: the least a validating MCP server does per call -------------------------------------
#
# Not a server anyone should run: a yardstick between the empty app and a real one. Per POST it
# checks the two headers that pick the path (Content-Type, MCP-Protocol-Version), reads the body,
# parses the JSON text, validates the params against the version's generated `CallToolRequestParams`
# and the arguments against the tool's parameters, runs the tool (a sync one in a worker thread, as
# both libraries do), and answers the result (text and structured content) as JSON. It skips the
# rest of what the protocol asks of a server: the JSON-RPC envelope (any request with an id but
# `initialize` is taken for a `tools/call`), the `_meta` and routing-header checks, capability
# gates, the tool's output schema, error answers of any kind (a bad request raises), cancellation,
# progress and SSE, the handshake's negotiation (`initialize` gets a fixed answer and a session id,
# which later calls must carry), server info in `_meta`. What a real server costs beyond it is the
# protocol's work and its library's structure.


def floor() -> Any:
    import uuid

    import anyio.to_thread
    import pydantic_core
    from mcpgen.generated.v2025_11_25 import models as v25
    from mcpgen.generated.v2026_07_28 import models as v26
    from mcpgen.runtime.protocol.wire import dumps  # mcpgen's writer: orjson where installed
    from pydantic import BaseModel, TypeAdapter

    class AddArguments(BaseModel):
        a: int
        b: int

    params_of = {
        b"2026-07-28": TypeAdapter(v26.CallToolRequestParams),
        b"2025-11-25": TypeAdapter(v25.CallToolRequestParams),
    }
    sessions: set[bytes] = set()
    json_head = [(b"content-type", b"application/json")]

    async def run(name: str, arguments: dict[str, Any] | None) -> Any:
        if name == "where":
            return await anyio.to_thread.run_sync(where)
        given = AddArguments.model_validate(arguments or {})
        if name == "add_async":
            return await add_async(given.a, given.b)
        return await anyio.to_thread.run_sync(add, given.a, given.b)

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await _empty(scope, receive, send)
            return
        headers = dict(scope["headers"])
        if headers.get(b"content-type") != b"application/json":
            raise ValueError("POST application/json")
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        request = pydantic_core.from_json(body)
        head = json_head
        if request.get("method") == "initialize":
            session = uuid.uuid4().hex.encode()
            sessions.add(session)
            head = [*json_head, (b"mcp-session-id", session)]
            result: Any = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "floor", "version": "1"},
            }
        elif "id" not in request:  # a notification
            await send({"type": "http.response.start", "status": 202, "headers": [(b"content-length", b"0")]})
            await send({"type": "http.response.body", "body": b""})
            return
        else:
            version = headers.get(b"mcp-protocol-version", b"")
            if version != b"2026-07-28" and headers.get(b"mcp-session-id") not in sessions:
                raise ValueError("a handshake-era call needs an open session")
            params = params_of[version].validate_python(request["params"])
            value = await run(params.name, params.arguments)
            result = {"content": [{"type": "text", "text": str(value)}], "structuredContent": {"result": value}}
        answer = dumps({"jsonrpc": "2.0", "id": request["id"], "result": result})
        head = [*head, (b"content-length", b"%d" % len(answer))]
        await send({"type": "http.response.start", "status": 200, "headers": head})
        await send({"type": "http.response.body", "body": answer})

    return app
