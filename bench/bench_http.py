"""Streamable HTTP: `tools/call` round trips per second and memory per idle handshake-era session,
mcpgen's server against the official SDK's, both under uvicorn (same settings), same run.

One driver (httpx, one keep-alive connection, sequential requests) speaks to both servers, so
the numbers compare the servers: modern era = self-contained POSTs with `_meta` and the routing
headers; handshake era = one session (initialize, then calls carrying `Mcp-Session-Id`). Memory:
the growth of the server process's resident set over `SESSIONS` idle sessions (initialized,
nothing open), per session.
"""

from __future__ import annotations

import json
import os
import selectors
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from _util import save, table

HERE = Path(__file__).resolve().parent
CALLS = 2000
SESSIONS = 300
SERVERS = {"mcpgen": HERE / "servers" / "ours_http.py", "official": HERE / "servers" / "official_http.py"}
HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
V25, V26 = "2025-11-25", "2026-07-28"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def serving(script: Path) -> Iterator[tuple[str, int]]:
    """The server script under uvicorn on a free port, once it says it runs: (URL, pid)."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(script), str(port)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, bufsize=0
    )
    assert proc.stdout is not None
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ)
    try:
        while True:
            if not selector.select(60):
                raise TimeoutError(f"{script.name} did not start")
            line = proc.stdout.readline().decode()
            if not line:
                raise RuntimeError(f"{script.name} exited")
            if "Uvicorn running on" in line:
                break
        selector.close()
        # Keep reading its output so a chatty server never blocks on a full pipe.
        subprocess.Popen(["cat"], stdin=proc.stdout, stdout=subprocess.DEVNULL)
        yield f"http://127.0.0.1:{port}/mcp", proc.pid
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def body(id: int, method: str, params: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).encode()


def result_of(response: httpx.Response) -> Any:
    """The JSON-RPC result of a JSON or SSE response."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        for line in response.text.splitlines():
            if line.startswith("data: ") and '"result"' in line:
                return json.loads(line[6:])["result"]
        raise AssertionError(f"no result in {response.text!r}")
    return response.json()["result"]


def open_session(http: httpx.Client, url: str) -> dict[str, str]:
    init = {"protocolVersion": V25, "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}
    opened = http.post(url, content=body(0, "initialize", init), headers=HEADERS)
    headers = {**HEADERS, "mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": V25}
    http.post(url, content=b'{"jsonrpc":"2.0","method":"notifications/initialized"}', headers=headers)
    return headers


def calls_per_second(url: str, era: str) -> float:
    with httpx.Client(timeout=30) as http:
        if era == V26:
            meta = {"io.modelcontextprotocol/protocolVersion": V26, "io.modelcontextprotocol/clientCapabilities": {}}
            params = {"name": "add", "arguments": {"a": 1, "b": 2}, "_meta": meta}
            headers = {**HEADERS, "mcp-protocol-version": V26, "mcp-method": "tools/call", "mcp-name": "add"}
        else:
            params = {"name": "add", "arguments": {"a": 1, "b": 2}}
            headers = open_session(http, url)
        for i in range(100):  # warm up
            assert result_of(http.post(url, content=body(i, "tools/call", params), headers=headers))["content"]
        best = 0.0
        for _ in range(3):
            start = time.perf_counter()
            for i in range(CALLS):
                http.post(url, content=body(i, "tools/call", params), headers=headers)
            best = max(best, CALLS / (time.perf_counter() - start))
        assert "3" in json.dumps(result_of(http.post(url, content=body(1, "tools/call", params), headers=headers)))
        return best


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise LookupError("no VmRSS")


def kib_per_session(url: str, pid: int) -> float:
    with httpx.Client(timeout=30) as http:
        for _ in range(20):  # warm up: code paths and caches
            open_session(http, url)
        before = rss_kib(pid)
        for _ in range(SESSIONS):
            open_session(http, url)
        return (rss_kib(pid) - before) / SESSIONS


def main() -> None:
    rates: dict[tuple[str, str], float] = {}
    memory: dict[str, float] = {}
    for name, script in SERVERS.items():
        with serving(script) as (url, pid):
            for era in (V26, V25):
                rates[name, era] = calls_per_second(url, era)
            memory[name] = kib_per_session(url, pid)
        print(
            name,
            {era: f"{rates[name, era]:,.0f}/s" for era in (V26, V25)},
            f"{memory[name]:.1f} KiB/session",
            flush=True,
        )
    rows = []
    for era, label in ((V26, "modern (2026-07-28)"), (V25, "handshake (2025-11-25)")):
        ours, theirs = rates["mcpgen", era], rates["official", era]
        rows.append(
            {
                "measure": f"tools/call, {label}",
                "mcpgen": f"{ours:,.0f}/s",
                "official": f"{theirs:,.0f}/s",
                "ratio": f"{ours / theirs:.2f}x",
            }
        )
    ours_mem, theirs_mem = memory["mcpgen"], memory["official"]
    rows.append(
        {
            "measure": f"memory per idle session ({SESSIONS})",
            "mcpgen": f"{ours_mem:.1f} KiB",
            "official": f"{theirs_mem:.1f} KiB",
            "ratio": f"{ours_mem / theirs_mem:.2f}x",
        }
    )
    save("http", rows)
    print(table(rows, ["measure", "mcpgen", "official", "ratio"]))


if __name__ == "__main__":
    os.chdir(HERE.parent)
    main()
