"""CPU instructions per `tools/call` round trip, in memory, mcpgen against the official SDK.

Timings on a shared machine move by tens of percent between runs; instruction counts do not.
Each case runs under `valgrind --tool=callgrind` twice, with 0 and with N calls after the same
warm-up, and the difference divided by N is the cost of one call (client and server together).

Cases: `ours` (the server as it comes: a plain `def` tool, in a worker thread; no middleware;
telemetry as installed, with no SDK configured), then variants joined by `-`: `quiet` (telemetry
turned off on both sides: what a process without `opentelemetry-api` runs), `middleware` (one
pass-through request middleware), `toolmiddleware` (one pass-through tool middleware), `async`
(the tool as an `async def`: on the event loop, no worker thread); and `official`. A checkout
before the server toolkit runs `ours` and `ours-async` (PYTHONPATH pointing at its `mcpgen`).

    python bench/bench_instructions.py [--calls 400] [--cases ours,official]
"""

from __future__ import annotations

import argparse
import os
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

async def ours_case(mode, n, variant):
    from mcpgen.runtime import Client, Server

    async def async_add(a: int, b: int) -> int:
        return a + b

    options, client_options = {{}}, {{}}
    if "quiet" in variant:
        from mcpgen.runtime import Diagnostics, Telemetry

        options["diagnostics"] = Diagnostics(telemetry=Telemetry(enabled=False))
        client_options["telemetry"] = Telemetry(enabled=False)
    if "middleware" in variant:
        from mcpgen.runtime import Middleware

        class PassRequests(Middleware):
            async def on_request(self, request, call_next):
                return await call_next()

        options["middleware"] = [PassRequests()]
    if "toolmiddleware" in variant:
        from mcpgen.runtime import Middleware

        class PassTools(Middleware):
            async def on_tool_call(self, call, call_next):
                return await call_next()

        options["middleware"] = [PassTools()]
    server = Server("bench", logging=False, **options)
    server.add_tool(async_add if "async" in variant else b._typed_add, name="add")
    async with Client(server, mode=mode, **client_options) as client:
        for _ in range(50 + n):
            await client.call_tool("add", {{"a": 1, "b": 2}})

async def ours(mode, n):
    await ours_case(mode, n, "")

async def official(mode, n):
    from mcp import Client
    from mcp.server.mcpserver import MCPServer
    server = MCPServer("bench")
    server.tool()(b._typed_add)
    async with Client(server, mode=mode) as client:
        for _ in range(50 + n):
            await client.call_tool("_typed_add", {{"a": 1, "b": 2}})

who = sys.argv[1]
if who == "official":
    anyio.run(official, sys.argv[2], int(sys.argv[3]))
else:
    anyio.run(ours_case, sys.argv[2], int(sys.argv[3]), set(who.split("-")[1:]))
"""
CASES = (
    "ours",
    "ours-quiet",
    "ours-middleware",
    "ours-toolmiddleware",
    "ours-async",
    "ours-async-quiet",
    "ours-async-middleware",
    "official",
)


def instructions(who: str, mode: str, calls: int) -> int:
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-c",
         DRIVER.format(here=str(HERE)), who, mode, str(calls)],
        capture_output=True, text=True, check=True,
        env={**os.environ, "PYTHONHASHSEED": "0"},  # string hashes decide dict and set layouts: the same every run
    )  # fmt: skip
    found = re.search(r"Collected : ([\d,]+)", done.stderr)
    assert found, done.stderr[-2000:]
    return int(found.group(1).replace(",", ""))


def per_call(who: str, mode: str, calls: int) -> int:
    return (instructions(who, mode, calls) - instructions(who, mode, 0)) // calls


def main(calls: int, cases: list[str]) -> None:
    if shutil.which("valgrind") is None:
        raise SystemExit("needs valgrind (Debian: apt-get install valgrind)")
    rows = []
    for era, mode in ERA_MODE.items():
        row: dict[str, str] = {"era": era}
        counts = {case: per_call(case, mode, calls) for case in cases}
        for case, count in counts.items():
            row[f"{case} instructions/call"] = f"{count:,}"
        if "ours" in counts and "official" in counts:
            row["ratio"] = f"{counts['official'] / counts['ours']:.2f}x fewer"
        rows.append(row)
        print(rows[-1], flush=True)
    save("instructions", rows)
    print(table(rows, list(rows[0])))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--cases", default="ours,official", help=f"comma-separated, of {', '.join(CASES)}")
    arguments = parser.parse_args()
    chosen = [case.strip() for case in arguments.cases.split(",") if case.strip()]
    unknown = set(chosen) - set(CASES)
    if unknown:
        raise SystemExit(f"unknown cases: {', '.join(sorted(unknown))} (choose from {', '.join(CASES)})")
    main(arguments.calls, chosen)
