"""Cost of one multi-round-trip round (an elicitation answered by a client handler) against a
plain `tools/call`, for mcpgen and for the official SDK, in the same run, both eras, in memory,
with sync tools (`def`) and async tools (`async def`) on both sides.

Modern era: the call returns `InputRequiredResult`, the client's driver answers and retries.
Handshake era: the server sends `elicitation/create` to the client mid-call (mcpgen's legacy
shim runs the same handler; the official SDK's `Resolve` marker does the same on its side).
The round's cost is 1/rate(asking tool) - 1/rate(plain tool) of the same kind.

    python bench/bench_mrtr.py [--calls 1500]
"""

# No `from __future__ import annotations`: the official SDK evaluates the tools' annotations, and
# its `Resolve(...)` marker names a function local to `official_server`.
import argparse
import time
from typing import Annotated, Any

import anyio
from _cases import ERAS, KINDS, kind_label, runs_on
from _util import command, save_tables
from apps import where
from mcp.server.elicitation import ElicitationResult
from mcp.server.mcpserver.resolve import Elicit, Resolve
from mcpgen.runtime import InputHandlers
from pydantic import BaseModel


class Confirm(BaseModel):
    ok: bool


async def _rate(call: Any, n: int) -> float:
    for _ in range(30):
        result = await call()
    assert "done x" in str(result), result
    start = time.perf_counter()
    for _ in range(n):
        await call()
    return n / (time.perf_counter() - start)


def ours_server() -> Any:
    from mcpgen.runtime import RequestContext, Server, ServerAdvertising, elicit

    server = Server("bench", advertising=ServerAdvertising(logging=False))

    @server.tool()
    def plain(item: str) -> str:
        return f"done {item}"

    @server.tool()
    async def plain_async(item: str) -> str:
        return f"done {item}"

    @server.tool()
    def ask(ctx: RequestContext, item: str) -> str:
        if ctx.input_response("ok") is None:
            return ctx.input_required(ok=elicit(f"Delete {item}?", Confirm))
        return f"done {item}"

    @server.tool()
    async def ask_async(ctx: RequestContext, item: str) -> str:
        if ctx.input_response("ok") is None:
            return ctx.input_required(ok=elicit(f"Delete {item}?", Confirm))
        return f"done {item}"

    server.add_tool(where)
    return server


def official_server() -> Any:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("bench")

    def ask_confirm(item: str) -> Elicit[Confirm]:
        return Elicit(f"Delete {item}?", Confirm)

    @server.tool()
    def plain(item: str) -> str:
        return f"done {item}"

    @server.tool()
    async def plain_async(item: str) -> str:
        return f"done {item}"

    @server.tool()
    def ask(item: str, answer: Annotated[ElicitationResult[Confirm], Resolve(ask_confirm)]) -> str:
        return f"done {item}"

    @server.tool()
    async def ask_async(item: str, answer: Annotated[ElicitationResult[Confirm], Resolve(ask_confirm)]) -> str:
        return f"done {item}"

    server.tool()(where)
    return server


SUFFIX = {"sync": "", "async": "_async"}


async def ours(mode: str, kind: str, calls: int) -> tuple[float, float, str]:
    from mcpgen.runtime import Client

    async def handler(params: Any) -> dict[str, Any]:
        return {"action": "accept", "content": {"ok": True}}

    async with Client(ours_server(), mode=mode, inputs=InputHandlers(elicitation=handler)) as client:
        plain_rate = await _rate(lambda: client.call_tool("plain" + SUFFIX[kind], {"item": "x"}), calls)
        ask_rate = await _rate(lambda: client.call_tool("ask" + SUFFIX[kind], {"item": "x"}), calls)
        return plain_rate, ask_rate, await runs_on(client)


async def official(mode: str, kind: str, calls: int) -> tuple[float, float, str]:
    from mcp import Client
    from mcp.types import ElicitResult

    async def handler(context: Any, params: Any) -> ElicitResult:
        return ElicitResult(action="accept", content={"ok": True})

    async with Client(official_server(), mode=mode, elicitation_callback=handler) as client:
        plain_rate = await _rate(lambda: client.call_tool("plain" + SUFFIX[kind], {"item": "x"}), calls)
        ask_rate = await _rate(lambda: client.call_tool("ask" + SUFFIX[kind], {"item": "x"}), calls)
        return plain_rate, ask_rate, await runs_on(client)


def _by_ask(rates: tuple[float, float, str]) -> float:
    return rates[1]


def main(calls: int) -> None:
    rows = []
    for era, mode in ERAS.items():
        for kind in KINDS:
            ours_plain, ours_ask, ours_where = max(
                (anyio.run(ours, mode, kind, calls) for _ in range(2)), key=lambda r: r[1]
            )
            off_plain, off_ask, off_where = max(
                (anyio.run(official, mode, kind, calls) for _ in range(2)), key=lambda r: r[1]
            )
            ours_cost = 1e6 / ours_ask - 1e6 / ours_plain
            off_cost = 1e6 / off_ask - 1e6 / off_plain
            rows.append(
                {
                    "era": era,
                    "tool": kind,
                    "where the tool ran": kind_label(kind, {"mcpgen": ours_where, "official": off_where}),
                    "mcpgen plain/s": f"{ours_plain:,.0f}",
                    "mcpgen 1-round/s": f"{ours_ask:,.0f}",
                    "mcpgen round cost": f"{ours_cost:,.0f} us",
                    "official plain/s": f"{off_plain:,.0f}",
                    "official 1-round/s": f"{off_ask:,.0f}",
                    "official round cost": f"{off_cost:,.0f} us",
                    "1-round call ratio": f"{ours_ask / off_ask:.2f}x",
                }
            )
            print(rows[-1], flush=True)
    table: dict[str, Any] = {
        "title": "multi-round-trip: one elicitation round in memory",
        "keys": ["era", "tool"],
        "columns": list(rows[0]),
        "rows": rows,
        "command": command(),
        "notes": [f"{calls} sequential calls per rate after 30 to warm up, Client(server); best of 2 runs per side"],
    }
    save_tables("mrtr", [table])


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=1500)
    main(parser.parse_args().calls)
