"""HTTP round trips: sequential `tools/call` over Streamable HTTP, mcpgen's client against the
official SDK's client, both talking to the same official server (uvicorn, in a subprocess), in
each era, with SSE answers (the server's default) and JSON answers.

The server is the same for both clients, so the calls/s ratio mostly shows the server's cost;
the client's own share is its CPU time per call (this process does nothing but the client).
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
from _util import save, table
from mcpgen.runtime import ClientChecks

HERE = Path(__file__).resolve().parent
CALLS = 600
RUNS = 5
ERA_MODE = {"handshake (2025-11-25)": "legacy", "modern (2026-07-28)": "2026-07-28"}


@contextmanager
def official_server(*options: str) -> Iterator[str]:
    process = subprocess.Popen(
        [sys.executable, str(HERE / "servers" / "official_http_peer.py"), *options], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        yield f"http://127.0.0.1:{int(process.stdout.readline())}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=30)


async def ours(url: str, mode: str) -> tuple[float, float]:
    from mcpgen.runtime import Client

    async with Client(url, mode=mode, checks=ClientChecks(structured_output=False)) as client:
        return await _timed(lambda: client.call_tool("add", {"a": 1, "b": 2}))


async def official(url: str, mode: str) -> tuple[float, float]:
    from mcp import Client

    async with Client(url, mode=mode) as client:
        return await _timed(lambda: client.call_tool("add", {"a": 1, "b": 2}))


async def _timed(call: Callable[[], Awaitable[Any]]) -> tuple[float, float]:
    """(calls per second, client CPU microseconds per call)."""
    for _ in range(30):
        result = await call()
    assert "3" in str(result)
    start, cpu = time.perf_counter(), time.process_time()
    for _ in range(CALLS):
        await call()
    return CALLS / (time.perf_counter() - start), (time.process_time() - cpu) / CALLS * 1e6


def main() -> None:
    rows = []
    for answers, options in (("SSE", ()), ("JSON", ("--json",))):
        with official_server(*options) as url:
            for era, mode in ERA_MODE.items():
                best: dict[str, tuple[float, float]] = {}
                for _ in range(RUNS):  # alternate, keep each one's best
                    for name, run in (("ours", ours), ("official", official)):
                        rate, cpu = anyio.run(run, url, mode)
                        old = best.get(name)
                        best[name] = (max(rate, old[0]), min(cpu, old[1])) if old else (rate, cpu)
                (our_rate, our_cpu), (their_rate, their_cpu) = best["ours"], best["official"]
                rows.append(
                    {
                        "answers": answers,
                        "era": era,
                        "mcpgen calls/s": f"{our_rate:,.0f}",
                        "official calls/s": f"{their_rate:,.0f}",
                        "ratio": f"{our_rate / their_rate:.2f}x",
                        "mcpgen client CPU/call": f"{our_cpu:,.0f} us",
                        "official client CPU/call": f"{their_cpu:,.0f} us",
                        "CPU ratio": f"{their_cpu / our_cpu:.2f}x",
                    }
                )
                print(rows[-1], flush=True)
    save("http_client", rows)
    columns = ["answers", "era", "mcpgen calls/s", "official calls/s", "ratio"]
    print(table(rows, [*columns, "mcpgen client CPU/call", "official client CPU/call", "CPU ratio"]))


if __name__ == "__main__":
    main()
