"""Memory per idle session: many connected, idle client/server pairs in one process, measured
with tracemalloc (Python allocations), mcpgen against the official SDK's in-process client."""

from __future__ import annotations

import gc
import tracemalloc
from contextlib import AsyncExitStack

import anyio
from _util import save, table

SESSIONS = 200


def _typed_add(a: int, b: int) -> int:
    return a + b


async def ours(mode: str) -> float:
    from mcpgen.runtime import Client, Server, memory_pair

    server = Server("bench", logging=False)
    server.add_tool(_typed_add, name="add")
    await _warm_ours(server, mode)
    async with anyio.create_task_group() as tg, AsyncExitStack() as stack:
        gc.collect()
        before = tracemalloc.take_snapshot()
        for _ in range(SESSIONS):
            client_end, server_end = memory_pair()
            tg.start_soon(server.serve, server_end)
            client = await stack.enter_async_context(Client(client_end, mode=mode))
            await client.call_tool("add", {"a": 1, "b": 2})
        gc.collect()
        after = tracemalloc.take_snapshot()
        tg.cancel_scope.cancel()
    return _per_session(before, after)


async def _warm_ours(server: object, mode: str) -> None:
    from mcpgen.runtime import Client, memory_pair

    client_end, server_end = memory_pair()
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve, server_end)  # type: ignore[attr-defined]
        async with Client(client_end, mode=mode) as client:
            await client.call_tool("add", {"a": 1, "b": 2})
        tg.cancel_scope.cancel()


async def official(mode: str) -> float:
    from mcp import Client
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("bench")
    server.tool()(_typed_add)
    async with Client(server, mode=mode) as warm:
        await warm.call_tool("_typed_add", {"a": 1, "b": 2})
    async with AsyncExitStack() as stack:
        gc.collect()
        before = tracemalloc.take_snapshot()
        for _ in range(SESSIONS):
            client = await stack.enter_async_context(Client(server, mode=mode))
            await client.call_tool("_typed_add", {"a": 1, "b": 2})
        gc.collect()
        after = tracemalloc.take_snapshot()
    return _per_session(before, after)


def _per_session(before: tracemalloc.Snapshot, after: tracemalloc.Snapshot) -> float:
    grown = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    return grown / SESSIONS


def main() -> None:
    tracemalloc.start()
    rows = []
    for era, mode in (("handshake (2025-11-25)", "legacy"), ("modern (2026-07-28)", "2026-07-28")):
        mine = anyio.run(ours, mode)
        theirs = anyio.run(official, mode)
        rows.append(
            {
                "era": era,
                "mcpgen KiB/session": f"{mine / 1024:.1f}",
                "official KiB/session": f"{theirs / 1024:.1f}",
                "ratio (official / mcpgen)": f"{theirs / mine:.2f}x",
            }
        )
    save("memory", rows)
    print(table(rows, list(rows[0])))


if __name__ == "__main__":
    main()
