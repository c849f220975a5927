"""HTTP clients: sequential `tools/call` over Streamable HTTP, mcpgen's client against the official
SDK's client, both talking to the same official server (uvicorn, in a subprocess), in each era,
with SSE answers (the server's default) and JSON answers, calling the server's sync tool (`def`,
which the official server runs in a worker thread) and its async tool (`async def`).

The server is the same for both clients, so the calls/s ratio mostly shows the server's cost; the
client's own cost is its CPU time per call (this process does nothing but the client).

    python bench/bench_http_client.py [--calls 600] [--rounds 5]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
from _cases import ARGS, ERAS, KINDS, TOOL_NAMES, runs_on
from _util import RESULTS, child_env, command, save_tables
from mcpgen.runtime import ClientChecks

HERE = Path(__file__).resolve().parent
LOGS = RESULTS / "logs"


@contextmanager
def official_server(*options: str) -> Iterator[str]:
    LOGS.mkdir(parents=True, exist_ok=True)
    with (LOGS / "http_client-peer.log").open("ab") as log:  # its session messages, kept out of the tables
        process = subprocess.Popen(
            [sys.executable, str(HERE / "servers" / "official_http_peer.py"), *options],
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            env=child_env(),
        )
    try:
        assert process.stdout is not None
        yield f"http://127.0.0.1:{int(process.stdout.readline())}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=30)


async def ours(url: str, mode: str, tool: str, calls: int) -> tuple[float, float]:
    from mcpgen.runtime import Client

    mode = "handshake" if mode == "legacy" else mode  # its own word (the official client's is "legacy")
    async with Client(url, mode=mode, checks=ClientChecks(structured_output=False)) as client:
        return await _timed(lambda: client.call_tool(tool, ARGS), calls)


async def official(url: str, mode: str, tool: str, calls: int) -> tuple[float, float]:
    from mcp import Client

    async with Client(url, mode=mode) as client:
        return await _timed(lambda: client.call_tool(tool, ARGS), calls)


async def where(url: str) -> str:
    from mcp import Client

    async with Client(url, mode="2026-07-28") as client:
        return await runs_on(client)


async def _timed(call: Callable[[], Awaitable[Any]], calls: int) -> tuple[float, float]:
    """(calls per second, client CPU microseconds per call)."""
    for _ in range(30):
        result = await call()
    assert result.structured_content == {"result": 3}, result
    start, cpu = time.perf_counter(), time.process_time()
    for _ in range(calls):
        await call()
    return calls / (time.perf_counter() - start), (time.process_time() - cpu) / calls * 1e6


def main(calls: int, rounds: int) -> None:
    rows = []
    for answers, options in (("SSE", ()), ("JSON", ("--json",))):
        with official_server(*options) as url:
            sync_place = anyio.run(where, url)
            for era, mode in ERAS.items():
                for kind in KINDS:
                    best: dict[str, tuple[float, float]] = {}
                    for _ in range(rounds):  # alternate, keep each one's best
                        for name, run in (("ours", ours), ("official", official)):
                            rate, cpu = anyio.run(run, url, mode, TOOL_NAMES[kind], calls)
                            old = best.get(name)
                            best[name] = (max(rate, old[0]), min(cpu, old[1])) if old else (rate, cpu)
                    (our_rate, our_cpu), (their_rate, their_cpu) = best["ours"], best["official"]
                    rows.append(
                        {
                            "answers": answers,
                            "era": era,
                            "server tool": f"sync (server: {sync_place})" if kind == "sync" else "async",
                            "mcpgen calls/s": f"{our_rate:,.0f}",
                            "official calls/s": f"{their_rate:,.0f}",
                            "ratio": f"{our_rate / their_rate:.2f}x",
                            "mcpgen client CPU/call": f"{our_cpu:,.0f} us",
                            "official client CPU/call": f"{their_cpu:,.0f} us",
                            "CPU ratio": f"{their_cpu / our_cpu:.2f}x less",
                        }
                    )
                    print(rows[-1], flush=True)
    table: dict[str, Any] = {
        "title": "Streamable HTTP client against the official server",
        "keys": ["answers", "era", "server tool"],
        "columns": list(rows[0]),
        "rows": rows,
        "command": command(),
        "notes": [
            f"{calls} sequential calls after 30 to warm up, one client at a time, best of {rounds} alternating rounds;"
            " client CPU = this process's CPU time per call (the server is another process)",
            "server: bench/servers/official_http_peer.py (the official MCPServer under uvicorn, h11, one worker);"
            " the sync tool runs where the table says (its `where` tool)",
        ],
    }
    save_tables("http_client", [table])


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    main(options.calls, options.rounds)
