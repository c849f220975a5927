"""Round trips per second for `tools/call` (sequential), mcpgen against the official SDK, same run,
with a sync tool (`def`) and an async tool (`async def`) on both sides.

In memory: `Client(server)` on both sides. mcpgen runs client and server over its in-memory
transport (full JSON framing); the official `Client(MCPServer)` runs in process too (handshake era:
in-memory streams of JSON-RPC messages; modern: its direct dispatcher, which skips JSON). Over
stdio: each client drives a server subprocess built with the same library. Each library runs a sync
tool its own way; the table says where (the server answers a `where` tool).

    python bench/bench_roundtrip.py [--rounds 2]
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import anyio
from _cases import ARGS, ERAS, KINDS, SIDES, TOOL_NAMES, connect, kind_label, runs_on
from _util import command, save_tables

CALLS = {"memory": 3000, "stdio": 1500}


async def rate(side: str, transport: str, mode: str, kind: str) -> tuple[float, str]:
    """(calls per second, where the server ran a sync tool)."""
    async with connect(side, transport, mode) as client:
        where = await runs_on(client)
        name, n = TOOL_NAMES[kind], CALLS[transport]
        for _ in range(50):  # warm up: validators are built on first use
            result = await client.call_tool(name, ARGS)
        assert result.structured_content == {"result": 3}, result
        start = time.perf_counter()
        for _ in range(n):
            await client.call_tool(name, ARGS)
        return n / (time.perf_counter() - start), where


def main(rounds: int) -> None:
    rows = []
    for transport in CALLS:
        for era, mode in ERAS.items():
            for kind in KINDS:
                best: dict[str, float] = {}
                where: dict[str, str] = {}
                for _ in range(rounds):  # alternate the sides; keep each one's best
                    for side in SIDES:
                        calls, where[side] = anyio.run(rate, side, transport, mode, kind)
                        best[side] = max(best.get(side, 0.0), calls)
                rows.append(
                    {
                        "transport": transport,
                        "era": era,
                        "tool": kind,
                        "where the tool ran": kind_label(kind, where),
                        "mcpgen calls/s": f"{best['mcpgen']:,.0f}",
                        "official calls/s": f"{best['official']:,.0f}",
                        "ratio": f"{best['mcpgen'] / best['official']:.2f}x",
                    }
                )
                print(rows[-1], flush=True)
    notes = [
        f"sequential calls of add(a, b) ({CALLS['memory']} in memory, {CALLS['stdio']} over stdio, after 50 to warm"
        f" up), best of {rounds} alternating rounds per side",
        "memory: Client(server) on both sides; mcpgen frames every message as JSON, the official modern"
        " in-process path dispatches directly without JSON",
    ]
    columns = ["transport", "era", "tool", "where the tool ran", "mcpgen calls/s", "official calls/s", "ratio"]
    table: dict[str, Any] = {
        "title": "tools/call round trips per second (in memory, stdio)",
        "keys": ["transport", "era", "tool"],
        "columns": columns,
        "rows": rows,
        "command": command(),
        "notes": notes,
    }
    save_tables("roundtrip", [table])


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2)
    main(parser.parse_args().rounds)
