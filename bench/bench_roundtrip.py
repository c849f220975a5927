"""Round trips per second for `tools/call` (sequential), mcpgen against the official SDK, same run.

In memory: mcpgen runs client and server over its in-memory transport (full JSON framing);
the official `Client(MCPServer)` runs in process too (legacy: in-memory streams with JSON-RPC
messages; modern: its direct dispatcher, which skips JSON entirely). Over stdio: each client
drives a server subprocess built with the same library.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import anyio
from _util import save, table

HERE = Path(__file__).resolve().parent
CALLS = {"memory": 3000, "stdio": 1500}
ERA_MODE = {"handshake (2025-11-25)": "legacy", "modern (2026-07-28)": "2026-07-28"}


async def ours_memory(mode: str, n: int) -> float:
    from mcpgen.runtime import Client, Server, memory_pair

    server = Server("bench", logging=False)
    server.add_tool(_typed_add, name="add")
    client_end, server_end = memory_pair()
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve, server_end)
        async with Client(client_end, mode=mode) as client:
            rate = await _timed(lambda: client.call_tool("add", {"a": 1, "b": 2}), n)
        tg.cancel_scope.cancel()
    return rate


def _typed_add(a: int, b: int) -> int:
    return a + b


async def official_memory(mode: str, n: int) -> float:
    from mcp import Client
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("bench")
    server.tool()(_typed_add)
    async with Client(server, mode=mode) as client:
        return await _timed(lambda: client.call_tool("_typed_add", {"a": 1, "b": 2}), n)


async def ours_stdio(mode: str, n: int) -> float:
    from mcpgen.runtime import Client

    async with Client([sys.executable, str(HERE / "servers" / "ours_stdio.py")], mode=mode) as client:
        return await _timed(lambda: client.call_tool("add", {"a": 1, "b": 2}), n)


async def official_stdio(mode: str, n: int) -> float:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=[str(HERE / "servers" / "official_stdio.py")])
    async with Client(params, mode=mode) as client:
        return await _timed(lambda: client.call_tool("add", {"a": 1, "b": 2}), n)


async def _timed(call: Any, n: int) -> float:
    for _ in range(50):  # warm up: validators are built on first use
        result = await call()
    assert "3" in str(result)
    start = time.perf_counter()
    for _ in range(n):
        await call()
    return n / (time.perf_counter() - start)


def main() -> None:
    rows = []
    runners = {"memory": (ours_memory, official_memory), "stdio": (ours_stdio, official_stdio)}
    for transport, (ours, theirs) in runners.items():
        for era, mode in ERA_MODE.items():
            n = CALLS[transport]
            ours_rate = max(anyio.run(ours, mode, n) for _ in range(2))
            theirs_rate = max(anyio.run(theirs, mode, n) for _ in range(2))
            rows.append(
                {
                    "transport": transport,
                    "era": era,
                    "mcpgen calls/s": f"{ours_rate:,.0f}",
                    "official calls/s": f"{theirs_rate:,.0f}",
                    "ratio": f"{ours_rate / theirs_rate:.2f}x",
                }
            )
            print(rows[-1], flush=True)
    save("roundtrip", rows)
    print(table(rows, ["transport", "era", "mcpgen calls/s", "official calls/s", "ratio"]))


if __name__ == "__main__":
    main()
