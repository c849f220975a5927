"""CPU instructions per `tools/call` round trip, in memory, mcpgen against the official SDK.

Timings on a shared machine move by tens of percent between runs; instruction counts do not.
Each case runs under `valgrind --tool=callgrind` twice, with 0 and with N calls after the same
warm-up, and the difference divided by N is the cost of one call (client and server together).

    python bench/bench_instructions.py [--calls 400]
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path

from _util import save, table

HERE = Path(__file__).resolve().parent
ERA_MODE = {"handshake (2025-11-25)": "legacy", "modern (2026-07-28)": "2026-07-28"}

DRIVER = """
import sys
import anyio
sys.path.insert(0, {here!r})
import bench_roundtrip as b

async def ours(mode, n):
    from mcpgen.runtime import Client, Server
    server = Server("bench", logging=False)
    server.add_tool(b._typed_add, name="add")
    async with Client(server, mode=mode) as client:
        for _ in range(50 + n):
            await client.call_tool("add", {{"a": 1, "b": 2}})

async def official(mode, n):
    from mcp import Client
    from mcp.server.mcpserver import MCPServer
    server = MCPServer("bench")
    server.tool()(b._typed_add)
    async with Client(server, mode=mode) as client:
        for _ in range(50 + n):
            await client.call_tool("_typed_add", {{"a": 1, "b": 2}})

anyio.run({{"ours": ours, "official": official}}[sys.argv[1]], sys.argv[2], int(sys.argv[3]))
"""


def instructions(who: str, mode: str, calls: int) -> int:
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-c",
         DRIVER.format(here=str(HERE)), who, mode, str(calls)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    found = re.search(r"Collected : ([\d,]+)", done.stderr)
    assert found, done.stderr[-2000:]
    return int(found.group(1).replace(",", ""))


def per_call(who: str, mode: str, calls: int) -> int:
    return (instructions(who, mode, calls) - instructions(who, mode, 0)) // calls


def main(calls: int) -> None:
    if shutil.which("valgrind") is None:
        raise SystemExit("needs valgrind (Debian: apt-get install valgrind)")
    rows = []
    for era, mode in ERA_MODE.items():
        ours, theirs = per_call("ours", mode, calls), per_call("official", mode, calls)
        rows.append(
            {
                "era": era,
                "mcpgen instructions/call": f"{ours:,}",
                "official instructions/call": f"{theirs:,}",
                "ratio": f"{theirs / ours:.2f}x fewer",
            }
        )
        print(rows[-1], flush=True)
    save("instructions", rows)
    print(table(rows, ["era", "mcpgen instructions/call", "official instructions/call", "ratio"]))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=400)
    main(parser.parse_args().calls)
