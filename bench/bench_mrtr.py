"""Cost of one multi-round-trip round (an elicitation answered by a client handler) against a
plain `tools/call`, for mcpgen and for the official SDK, in the same run, both eras, in memory.

Modern era: the call returns `InputRequiredResult`, the client's driver answers and retries.
Handshake era: the server sends `elicitation/create` to the client mid-call (mcpgen's legacy
shim runs the same handler; the official SDK's `Resolve` marker does the same on its side).
"""

import time
from typing import Annotated, Any

import anyio
from _util import save, table
from mcp.server.elicitation import ElicitationResult
from mcp.server.mcpserver.resolve import Elicit, Resolve
from mcpgen.runtime import InputHandlers
from pydantic import BaseModel

CALLS = 1500


class Confirm(BaseModel):
    ok: bool


async def _rate(call: Any, n: int) -> float:
    for _ in range(30):
        await call()
    start = time.perf_counter()
    for _ in range(n):
        await call()
    return n / (time.perf_counter() - start)


async def ours(mode: str) -> tuple[float, float]:
    from mcpgen.runtime import Client, RequestContext, Server, memory_pair
    from mcpgen.runtime.protocol.input_requests import elicit

    server = Server("bench", logging=False)

    @server.tool()
    def plain(item: str) -> str:
        return f"done {item}"

    @server.tool()
    async def ask(ctx: RequestContext, item: str) -> str:
        answer = ctx.input_response("ok")
        if answer is None:
            return ctx.input_required(ok=elicit(f"Delete {item}?", Confirm))
        return f"done {item}"

    async def handler(params: Any) -> dict[str, Any]:
        return {"action": "accept", "content": {"ok": True}}

    client_end, server_end = memory_pair()
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve, server_end)
        async with Client(client_end, mode=mode, inputs=InputHandlers(elicitation=handler)) as client:
            plain_rate = await _rate(lambda: client.call_tool("plain", {"item": "x"}), CALLS)
            ask_rate = await _rate(lambda: client.call_tool("ask", {"item": "x"}), CALLS)
        tg.cancel_scope.cancel()
    return plain_rate, ask_rate


async def official(mode: str) -> tuple[float, float]:
    from mcp import Client
    from mcp.server.mcpserver import MCPServer
    from mcp.types import ElicitResult

    server = MCPServer("bench")

    def ask_confirm(item: str) -> Elicit[Confirm]:
        return Elicit(f"Delete {item}?", Confirm)

    @server.tool()
    def plain(item: str) -> str:
        return f"done {item}"

    @server.tool()
    def ask(item: str, answer: Annotated[ElicitationResult[Confirm], Resolve(ask_confirm)]) -> str:
        return f"done {item}"

    async def handler(context: Any, params: Any) -> ElicitResult:
        return ElicitResult(action="accept", content={"ok": True})

    async with Client(server, mode=mode, elicitation_callback=handler) as client:
        plain_rate = await _rate(lambda: client.call_tool("plain", {"item": "x"}), CALLS)
        ask_rate = await _rate(lambda: client.call_tool("ask", {"item": "x"}), CALLS)
    return plain_rate, ask_rate


def main() -> None:
    rows = []
    for era, mode in (("handshake (2025-11-25)", "legacy"), ("modern (2026-07-28)", "2026-07-28")):
        ours_plain, ours_ask = max((anyio.run(ours, mode) for _ in range(2)), key=lambda r: r[1])
        off_plain, off_ask = max((anyio.run(official, mode) for _ in range(2)), key=lambda r: r[1])
        ours_cost = 1e6 / ours_ask - 1e6 / ours_plain
        off_cost = 1e6 / off_ask - 1e6 / off_plain
        rows.append(
            {
                "era": era,
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
    save("mrtr", rows)
    print(table(rows, list(rows[0])))


if __name__ == "__main__":
    main()
