"""Streamable HTTP: `tools/call` round trips per second and memory per idle handshake-era session,
mcpgen's server against the official SDK's, both under uvicorn (same settings), same run.

One driver (httpx, one keep-alive connection, sequential requests) speaks to both servers, so
the numbers compare the servers: modern era = self-contained POSTs with `_meta` and the routing
headers; handshake era = one session (initialize, then calls carrying `Mcp-Session-Id`). Both
servers run at once and the measurement rounds alternate between them, so a busy machine slows
both alike; the rate is the best round, and the server's CPU time per call (from /proc) is the
least of the rounds, which other load on the machine hardly moves. Memory: the growth of the
server process's resident set over `SESSIONS` idle sessions (initialized, nothing open), per
session.
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
CALLS = 1000
ROUNDS = 5
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


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


class Driver:
    """A keep-alive client of one server and era, ready to send `tools/call`."""

    def __init__(self, url: str, pid: int, era: str) -> None:
        self.url, self.pid = url, pid
        self.http = httpx.Client(timeout=30)
        if era == V26:
            meta = {"io.modelcontextprotocol/protocolVersion": V26, "io.modelcontextprotocol/clientCapabilities": {}}
            self.params: dict[str, Any] = {"name": "add", "arguments": {"a": 1, "b": 2}, "_meta": meta}
            self.headers = {**HEADERS, "mcp-protocol-version": V26, "mcp-method": "tools/call", "mcp-name": "add"}
        else:
            self.params = {"name": "add", "arguments": {"a": 1, "b": 2}}
            self.headers = open_session(self.http, url)
        for i in range(100):  # warm up
            assert "3" in json.dumps(result_of(self.call(i)))

    def call(self, i: int) -> httpx.Response:
        return self.http.post(self.url, content=body(i, "tools/call", self.params), headers=self.headers)

    def round(self) -> tuple[float, float]:
        """(calls per second, server CPU seconds per call) over CALLS calls."""
        cpu = cpu_seconds(self.pid)
        start = time.perf_counter()
        for i in range(CALLS):
            self.call(i)
        elapsed = time.perf_counter() - start
        return CALLS / elapsed, (cpu_seconds(self.pid) - cpu) / CALLS


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
    cpu: dict[tuple[str, str], float] = {}
    memory: dict[str, float] = {}
    with serving(SERVERS["mcpgen"]) as ours, serving(SERVERS["official"]) as theirs:
        servers = {"mcpgen": ours, "official": theirs}
        for era in (V26, V25):
            drivers = {name: Driver(url, pid, era) for name, (url, pid) in servers.items()}
            for _ in range(ROUNDS):
                for name, driver in drivers.items():
                    rate, per_call = driver.round()
                    rates[name, era] = max(rates.get((name, era), 0.0), rate)
                    cpu[name, era] = min(cpu.get((name, era), float("inf")), per_call)
            for driver in drivers.values():
                driver.http.close()
        for name, (url, pid) in servers.items():
            memory[name] = kib_per_session(url, pid)
    rows = []
    for era, label in ((V26, "modern (2026-07-28)"), (V25, "handshake (2025-11-25)")):
        ours_rate, theirs_rate = rates["mcpgen", era], rates["official", era]
        rows.append(
            {
                "measure": f"tools/call, {label}",
                "mcpgen": f"{ours_rate:,.0f}/s ({cpu['mcpgen', era] * 1e6:,.0f} us CPU)",
                "official": f"{theirs_rate:,.0f}/s ({cpu['official', era] * 1e6:,.0f} us CPU)",
                "ratio": f"{ours_rate / theirs_rate:.2f}x ({cpu['official', era] / cpu['mcpgen', era]:.2f}x CPU)",
            }
        )
    ours_mem, theirs_mem = memory["mcpgen"], memory["official"]
    rows.append(
        {
            "measure": f"memory per idle session ({SESSIONS})",
            "mcpgen": f"{ours_mem:.1f} KiB",
            "official": f"{theirs_mem:.1f} KiB",
            "ratio": f"{theirs_mem / ours_mem:.2f}x less",
        }
    )
    save("http", rows)
    print(table(rows, ["measure", "mcpgen", "official", "ratio"]))


if __name__ == "__main__":
    os.chdir(HERE.parent)
    main()
