"""Streamable HTTP servers under load: mcpgen's against the official SDK's, and both against an
empty ASGI app on the same stack, driven by `wrk` (a native load generator, so the driver is never
the bottleneck).

Every server runs under the uvicorn command line with the same flags (`--factory`, no access log,
log level warning) on one stack: `--http h11 --loop asyncio` and, where httptools and uvloop are
installed, `--http httptools --loop uvloop`. The apps (`servers/apps.py`): the empty app (reads
the request, answers a fixed JSON-RPC result: the ceiling of the stack), the floor (the least any
validating MCP server does per call: parse, validate the params and the arguments, run the tool,
answer; no other protocol check: a yardstick, not a server), mcpgen's `http_app()`, the official
`streamable_http_app()` with its defaults (SSE answers) and with `json_response=True`.
Each mcp server has a sync tool (`def add`) and an async tool (`async def add_async`); the table
says where each library ran the sync one.

wrk (`wrk/mcp.lua`) sends `tools/call` POSTs, each with its own JSON-RPC id, over 1 or 50 keep-alive
connections, and checks every answer (a 200 with a result). Modern era: self-contained POSTs with
`_meta` and the routing headers. Handshake era: one session per connection, opened beforehand
(initialize, notifications/initialized); the calls carry the session ids in turn. For each case:
calls/s (wrk's count over its run) and the server's CPU time per call (user + system of the server
process and its children, from /proc, over the same run), and each rate as a share of the empty
app's rate in the same case.

Several workers (`--multi`): modern era, 50 connections (and 1), three ways of starting 2 workers:
- `mcpgen`: the documented command, `mcpgen serve --workers 2` (mcpgen only: the other apps are
  served as `bound`); its stack is the fastest installed one, whatever `--stacks` says;
- `uvicorn`: `uvicorn --workers 2 --factory ...` (mcpgen through its `app_factory`); on asyncio its
  listening socket gets no TCP_NODELAY on accepted connections;
- `bound`: `servers/multi.py`, the same uvicorn supervisor on a socket bound with IPPROTO_TCP.

Instructions (`--instructions`): the server's CPU instructions per call under callgrind, which do
not move with the machine's load: `servers/drive_asgi.py` feeds uvicorn's own protocol (h11 on
asyncio, httptools on uvloop) request bytes in one process, with 0 and with N calls, and the
difference divided by N is one call's cost (parsing, the app, writing the response; not the
kernel, not the client). Each app's count is given as the empty app's share of it: the rate the
app would reach, as a share of the empty app's, when the server's CPU is what limits both.

Bytecodes (`--bytecodes`): the Python bytecodes one call runs, exactly (`servers/drive_asgi.py`
with a `sys.settrace` opcode counter over N calls after the warm-up), in all and by who ran them
(uvicorn, the mcpgen runtime, the official SDK, starlette, pydantic, anyio, asyncio, ...), with the
functions that ran the most. No valgrind, the same on any machine under any load; Python's share
of the work only (what C code does per bytecode, parsing or validating, is not in it).

Counts (`--syscalls`): per call, over one wrk run, the server's system calls by kind (`perf trace
-s`, else `strace -c`), its context switches, and what its event loop did (`servers/counted.py`:
loop turns, callbacks, timers, tasks, writes). `--protocol mcpgen` serves every app with the HTTP
protocol classes `mcpgen serve` runs instead of uvicorn's own (timed runs, counts, instructions).

Memory: resident memory growth of the server per idle handshake-era session (h11 stack, httpx).

    python bench/bench_http.py [--seconds 5] [--stacks h11,httptools] [--apps empty,floor,mcpgen,official,official_json]
        [--configs modern:1,modern:50,handshake:1,handshake:50] [--tools sync,async]
        [--multi mcpgen,uvicorn,bound] [--multi-connections 50,1] [--no-multi] [--no-memory]
    python bench/bench_http.py --instructions [--calls 200] [--stacks h11,httptools] [--tools async]
        [--apps empty,mcpgen,official_json] [--configs modern:1,handshake:1] [--protocol mcpgen]
    python bench/bench_http.py --bytecodes [--calls 200] [--stacks h11,httptools] [--tools async]
        [--apps empty,floor,mcpgen,official_json] [--configs modern:1,handshake:1] [--protocol mcpgen]
    python bench/bench_http.py --syscalls [--seconds 3] [--stacks h11,httptools] [--apps empty,mcpgen]
        [--configs modern:1,handshake:1,modern:50] [--tools async] [--protocol mcpgen]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from _util import RESULTS, ROOT, child_env, command, save_tables

HERE = Path(__file__).resolve().parent
LUA = HERE / "wrk" / "mcp.lua"
LOGS = RESULTS / "logs"
SERVERS = "bench/servers"
V25, V26 = "2025-11-25", "2026-07-28"
HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
TOOLS = {"sync": "add", "async": "add_async"}

STACKS = {"h11": ("h11", "asyncio"), "httptools": ("httptools", "uvloop")}
STACK_LABEL = {"h11": "uvicorn h11 + asyncio", "httptools": "uvicorn httptools + uvloop"}
MCPGEN_PROTOCOLS = {  # `mcpgen serve`'s HTTP protocol classes (uvicorn's, with the head deadline)
    "h11": "mcpgen.runtime.server.http.protocols:TimedH11Protocol",
    "httptools": "mcpgen.runtime.server.http.protocols:TimedHttpToolsProtocol",
}
COUNTED_LOOPS = {"h11": "counted:asyncio_loop", "httptools": "counted:uvloop_loop"}
APPS = {
    "empty": "apps:empty",
    "floor": "apps:floor",
    "mcpgen": "apps:mcpgen_app",
    "official": "apps:official_sse",
    "official_json": "apps:official_json",
}
APP_LABEL = {
    "empty": "empty app",
    "floor": "floor",
    "mcpgen": "mcpgen",
    "official": "official SSE",
    "official_json": "official JSON",
}
LIBRARY = {"floor": "floor", "mcpgen": "mcpgen", "official": "official", "official_json": "official"}
MCPGEN_FACTORY = "mcpgen.runtime.server.http.workers:app_factory"
MCPGEN_SERVER = f"{SERVERS}/apps.py:ours_server"
LAUNCHER_LABEL = {
    "mcpgen": "mcpgen serve --workers 2 (mcpgen; the others as bound)",
    "uvicorn": "uvicorn --workers 2 (its own socket)",
    "bound": "servers/multi.py: same supervisor, socket bound with IPPROTO_TCP",
}
WORKERS = 2
CELLS = (
    "cells: calls/s, server CPU per call; % of empty: the rate as a share of the empty app's in the same case,"
    " then the empty app's CPU per call as a share of this app's;"
    " official SSE: the official server's defaults; official JSON: json_response=True"
)
MEMORY_SESSIONS = 300


# -- wrk -------------------------------------------------------------------------------------------


def ensure_wrk() -> str:
    """The path of `wrk`, installed with apt-get (as root) when missing."""
    found = shutil.which("wrk")
    if found:
        return found
    if shutil.which("apt-get") and os.geteuid() == 0:
        print("installing wrk: apt-get install -y wrk", flush=True)
        if subprocess.run(["apt-get", "install", "-y", "-q", "wrk"], check=False).returncode != 0:
            subprocess.run(["apt-get", "update", "-q"], check=True)
            subprocess.run(["apt-get", "install", "-y", "-q", "wrk"], check=True)
        found = shutil.which("wrk")
    if not found:
        raise SystemExit("needs wrk: apt-get install wrk (Debian/Ubuntu), brew install wrk (macOS)")
    return found


@dataclass
class Load:
    requests: int
    seconds: float
    bad: int
    cpu: float  # server CPU seconds over the run

    @property
    def rate(self) -> float:
        return self.requests / self.seconds

    @property
    def cpu_us(self) -> float:
        return self.cpu / max(self.requests, 1) * 1e6


@dataclass(frozen=True)
class Served:
    url: str
    pid: int
    cpu: int | None = None  # the one CPU the server runs on (`--pin`), the load generator on the others


def pinned(cpus: set[int] | None, cmd: list[str]) -> list[str]:
    """`cmd`, run on `cpus` (`taskset`, util-linux) when given."""
    if cpus is None:
        return cmd
    return ["taskset", "--cpu-list", ",".join(map(str, sorted(cpus))), *cmd]


def pin_cpu() -> int | None:
    """The CPU a pinned server runs on: the last this process may use (None: fewer than two, or
    no `taskset`)."""
    usable = sorted(os.sched_getaffinity(0))
    if len(usable) < 2 or shutil.which("taskset") is None:
        print("--pin needs two CPUs and taskset (util-linux): not pinned", flush=True)
        return None
    return usable[-1]


@dataclass(frozen=True)
class Case:
    era: str  # "modern" or "handshake"
    connections: int
    tool: str  # "sync" or "async"


def wrk(served: Served, case: Case, sessions: list[str], seconds: int) -> Load:
    args = [ensure_wrk(), "-t1", f"-c{case.connections}", f"-d{seconds}s", "--timeout", "10s", "-s", str(LUA)]
    cpu = tree_cpu_seconds(served.pid)
    others = None if served.cpu is None else set(os.sched_getaffinity(0)) - {served.cpu}
    done = subprocess.run(
        pinned(others, [*args, served.url, "--", case.era, TOOLS[case.tool], *sessions]),
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    cpu = tree_cpu_seconds(served.pid) - cpu
    line = next((x for x in done.stdout.splitlines() if x.startswith("mcpbench ")), None)
    if line is None:
        raise RuntimeError(f"wrk said: {done.stdout}{done.stderr}")
    requests, bad, micros, errors = (int(x) for x in line.split()[1:])
    return Load(requests, micros / 1e6, bad + errors, cpu)


# -- the server process ----------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def tree_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process and all its descendants (workers), from /proc."""
    total = 0.0
    pending = [pid]
    while pending:
        current = pending.pop()
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{current}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
            for task in Path(f"/proc/{current}/task").iterdir():
                pending += [int(child) for child in (task / "children").read_text().split()]
    return total


def server_command(  # noqa: PLR0913  (what is served, and how)
    stack: str, app: str, port: int, launcher: str | None, protocol: str = "uvicorn", counted: bool = False
) -> tuple[list[str], dict[str, str]]:
    """The command line that serves `app` on `stack` (one worker, or `WORKERS` with `launcher`):
    with uvicorn's own HTTP protocol class or `mcpgen serve`'s (`protocol`), on a loop that counts
    what it does (`counted`, `servers/counted.py`)."""
    http, loop = STACKS[stack]
    if protocol == "mcpgen":
        http = MCPGEN_PROTOCOLS[stack]
    if counted:
        loop = COUNTED_LOOPS[stack]
    env: dict[str, str] = {}
    target = APPS[app]
    if launcher is not None and app == "mcpgen":  # the worker processes build mcpgen's app with its factory
        target, env = MCPGEN_FACTORY, {"MCPGEN_SERVER": MCPGEN_SERVER}
    if launcher == "mcpgen" and app == "mcpgen":
        cmd = [sys.executable, "-m", "mcpgen.codegen.cli", "serve", MCPGEN_SERVER, "--workers", str(WORKERS),
               "--port", str(port), "--log-level", "warning"]  # fmt: skip
        return cmd, env
    if launcher in ("bound", "mcpgen"):
        cmd = [sys.executable, f"{SERVERS}/multi.py", target, "--workers", str(WORKERS), "--port", str(port),
               "--http", http, "--loop", loop, "--app-dir", SERVERS]  # fmt: skip
        return cmd, env
    cmd = [sys.executable, "-m", "uvicorn", "--factory", "--app-dir", SERVERS, target, "--host", "127.0.0.1",
           "--port", str(port), "--http", http, "--loop", loop, "--no-access-log",
           "--log-level", "warning"]  # fmt: skip
    if launcher == "uvicorn":
        cmd += ["--workers", str(WORKERS)]
    return cmd, env


def shown(cmd: list[str], env: dict[str, str]) -> str:
    words = ["python" if word == sys.executable else word for word in cmd]
    return " ".join([*(f"{k}={v}" for k, v in env.items()), *words]).replace(" --port 0", "")


@contextmanager
def serving(  # noqa: PLR0913  (what is served, and how)
    stack: str,
    app: str,
    launcher: str | None = None,
    protocol: str = "uvicorn",
    counts: Path | None = None,
    cpu: int | None = None,
) -> Iterator[Served]:
    """`app` served on `stack`, once it accepts connections (on a counting loop that writes its
    counts to `counts` on SIGUSR1, when given; on `cpu` alone, when given)."""
    port = free_port()
    cmd, env = server_command(stack, app, port, launcher, protocol, counts is not None)
    if counts is not None:
        env["MCPGEN_COUNTS"] = str(counts)
    LOGS.mkdir(parents=True, exist_ok=True)
    log = LOGS / f"{stack}-{app}-{launcher or 'single'}.log"
    with log.open("wb") as output:  # the server's own output, kept out of the tables
        proc = subprocess.Popen(
            pinned(None if cpu is None else {cpu}, cmd),
            cwd=ROOT, env=child_env(**env), stdout=output, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"server exited: {shown(cmd, env)}\n{log.read_text()[-3000:]}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"server did not start: {shown(cmd, env)}") from None
                time.sleep(0.1)
        yield Served(url, proc.pid, cpu)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


# -- JSON-RPC over httpx (set-up only: sessions, `where`, memory) ----------------------------------


def body(id: int, method: str, params: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).encode()


def result_of(response: httpx.Response) -> Any:
    """The JSON-RPC result of a JSON or SSE response."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        for line in response.text.splitlines():
            if line.startswith("data:") and '"result"' in line:
                return json.loads(line[5:])["result"]
        raise AssertionError(f"no result in {response.text!r}")
    return response.json()["result"]


def open_session(http: httpx.Client, url: str) -> str:
    init = {"protocolVersion": V25, "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}
    opened = http.post(url, content=body(0, "initialize", init), headers=HEADERS)
    opened.raise_for_status()
    session = opened.headers["mcp-session-id"]
    headers = {**HEADERS, "mcp-session-id": session, "mcp-protocol-version": V25}
    http.post(url, content=b'{"jsonrpc":"2.0","method":"notifications/initialized"}', headers=headers)
    return session


def open_sessions(url: str, n: int) -> list[str]:
    with httpx.Client(timeout=30) as http:
        return [open_session(http, url) for _ in range(n)]


def runs_on(url: str) -> str:
    """Where the server's library runs a sync tool (its `where` tool, a modern-era call)."""
    meta = {"io.modelcontextprotocol/protocolVersion": V26, "io.modelcontextprotocol/clientCapabilities": {}}
    params = {"name": "where", "arguments": {}, "_meta": meta}
    headers = {**HEADERS, "mcp-protocol-version": V26, "mcp-method": "tools/call", "mcp-name": "where"}
    deadline = time.monotonic() + 60
    while True:  # several workers: the first answer may come before every worker is up
        try:
            result = result_of(httpx.post(url, content=body(1, "tools/call", params), headers=headers, timeout=30))
            break
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    structured = result.get("structuredContent")
    return str(structured["result"] if structured else result["content"][0]["text"])


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
        for _ in range(MEMORY_SESSIONS):
            open_session(http, url)
        return (rss_kib(pid) - before) / MEMORY_SESSIONS


# -- measuring -------------------------------------------------------------------------------------


@dataclass
class Options:
    seconds: int
    warm_up: int
    stacks: list[str]
    apps: list[str]
    configs: list[tuple[str, int]]
    tools: list[str]
    multi: list[str]
    multi_connections: list[int]
    memory: bool
    instructions: bool = False
    bytecodes: bool = False
    calls: int = 200
    jobs: int = 1
    syscalls: bool = False
    protocol: str = "uvicorn"
    pin: bool = False


def measure(served: Served, app: str, case: Case, options: Options) -> Load:
    sessions = open_sessions(served.url, case.connections) if case.era == "handshake" else []
    wrk(served, case, sessions, options.warm_up)
    load = wrk(served, case, sessions, options.seconds)
    what = f"{app} {case.era}:{case.connections} {case.tool if app != 'empty' else ''}"
    print(f"  {what}: {load.rate:,.0f}/s, {load.cpu_us:,.0f} us CPU, {load.bad} bad", flush=True)
    return load


def cell(load: Load) -> str:
    bad = f" [{load.bad:,} bad]" if load.bad else ""
    return f"{load.rate:,.0f}/s, {load.cpu_us:,.0f} us{bad}"


def share(load: Load, empty: Load | None) -> str:
    """The rate as a share of the empty app's, and the empty app's CPU per call as a share of this
    app's (the steadier of the two where the rate is a ping-pong with the client: one connection)."""
    if not empty:
        return ""
    return f"{load.rate / empty.rate * 100:.0f}%, CPU {empty.cpu_us / max(load.cpu_us, 1e-9) * 100:.0f}%"


def ratio(ours: Load | None, theirs: Load | None) -> str:
    if ours is None or theirs is None:
        return ""
    return f"{ours.rate / theirs.rate:.2f}x rate, {theirs.cpu_us / ours.cpu_us:.2f}x less CPU"


def where_label(tool: str, where: dict[str, str]) -> str:
    if tool == "async":
        return "async def on the event loop (both)"
    return "; ".join(sorted({f"{LIBRARY[app]}: {place}" for app, place in where.items()}))


def compare(row: dict[str, str], got: dict[str, Load], empty: Load | None) -> None:
    """Add each app's cells to `row`: its load, its share of the empty app's rate, mcpgen's ratios."""
    row["empty app"] = cell(empty) if empty else ""
    for app, load in got.items():
        row[APP_LABEL[app]] = cell(load)
        row[f"{APP_LABEL[app]} % of empty"] = share(load, empty)
    for app in ("official", "official_json"):
        if app in got:
            row[f"mcpgen / {APP_LABEL[app]}"] = ratio(got.get("mcpgen"), got[app])


def single_worker(options: Options) -> dict[str, Any]:
    loads: dict[tuple[str, str, str, int, str], Load] = {}
    where: dict[str, str] = {}
    for stack in options.stacks:
        for app in options.apps:
            with serving(stack, app, protocol=options.protocol, cpu=pin_cpu() if options.pin else None) as served:
                print(f"{STACK_LABEL[stack]}: {APP_LABEL[app]}", flush=True)
                if app != "empty":
                    where[app] = runs_on(served.url)
                for era, connections in options.configs:
                    for tool in ["-"] if app == "empty" else options.tools:
                        case = Case(era, connections, "sync" if tool == "-" else tool)
                        loads[stack, app, era, connections, tool] = measure(served, app, case, options)
    rows = []
    for stack in options.stacks:
        for era, connections in options.configs:
            for tool in options.tools:
                empty = loads.get((stack, "empty", era, connections, "-"))
                got = {app: loads[stack, app, era, connections, tool] for app in options.apps if app != "empty"}
                row = {
                    "stack": STACK_LABEL[stack],
                    "era": era,
                    "connections": str(connections),
                    "tool": tool,
                    "where the tool ran": where_label(tool, {a: where[a] for a in got}),
                }
                compare(row, got, empty)
                row["command"] = command(
                    "--stacks", stack, "--configs", f"{era}:{connections}", "--tools", tool,
                    "--no-multi", "--no-memory", *(["--pin"] if options.pin else []),
                    *(["--protocol", "mcpgen"] if options.protocol == "mcpgen" else []),
                )  # fmt: skip
                rows.append(row)
    columns = list(rows[0])
    return {
        "title": "Streamable HTTP server under wrk, one worker",
        "keys": ["stack", "era", "connections", "tool"],
        "columns": [c for c in columns if c != "command"],
        "rows": rows,
        "command": command(),
        "notes": [
            f"each case: wrk -t1 -cN -d{options.seconds:g}s -s bench/wrk/mcp.lua URL -- ERA TOOL [SESSIONS...] after a"
            f" {options.warm_up:g} s warm-up run; CPU/call = server user+system time (from /proc) / calls",
            "servers: python -m uvicorn --factory --app-dir bench/servers apps:{empty|floor|mcpgen_app|official_sse|"
            "official_json} --host 127.0.0.1 --port PORT --http {h11|httptools} --loop {asyncio|uvloop} --no-access-log"
            " --log-level warning",
            "handshake era: one session per connection, opened before the runs; the calls carry them in turn",
            "--pin: each server on one CPU of its own (taskset), wrk on the others"
            if options.pin
            else "not pinned: the server and wrk share the CPUs as the system schedules them",
            CELLS,
        ],
    }


def multi_worker(options: Options) -> dict[str, Any]:
    rows = []
    for stack in options.stacks:
        for launcher in options.multi:
            loads: dict[tuple[str, int, str], Load] = {}
            where: dict[str, str] = {}
            for app in options.apps:
                with serving(stack, app, launcher) as served:
                    print(f"{STACK_LABEL[stack]}, {WORKERS} workers ({launcher}): {APP_LABEL[app]}", flush=True)
                    if app != "empty":
                        where[app] = runs_on(served.url)
                    for connections in options.multi_connections:
                        for tool in ["-"] if app == "empty" else options.tools:
                            case = Case("modern", connections, "sync" if tool == "-" else tool)
                            loads[app, connections, tool] = measure(served, app, case, options)
            for connections in options.multi_connections:
                for tool in options.tools:
                    empty = loads.get(("empty", connections, "-"))
                    got = {app: loads[app, connections, tool] for app in options.apps if app != "empty"}
                    row = {
                        "stack": STACK_LABEL[stack],
                        "workers": f"{WORKERS}: {LAUNCHER_LABEL[launcher]}",
                        "connections": str(connections),
                        "tool": tool,
                        "where the tool ran": where_label(tool, {a: where[a] for a in got}),
                    }
                    compare(row, got, empty)
                    row["command"] = command(
                        "--stacks", stack, "--multi", launcher, "--multi-connections", str(connections),
                        "--tools", tool, "--configs", "none", "--no-memory",
                    )  # fmt: skip
                    rows.append(row)
    return {
        "title": f"Streamable HTTP server under wrk, {WORKERS} workers, modern era",
        "keys": ["stack", "workers", "connections", "tool"],
        "columns": [c for c in rows[0] if c != "command"],
        "rows": rows,
        "command": command(),
        "notes": [
            "handshake-era sessions live in one process, so only the modern era runs on several workers;"
            " 1 connection shows a response that waits for the client's delayed ACK (some 40 ms) at its plainest",
            "servers: "
            + "; ".join(f"{m}: {shown(*server_command(options.stacks[0], 'mcpgen', 0, m))}" for m in options.multi)
            + " (the others: --app-dir bench/servers apps:FACTORY)",
            "CPU/call counts the supervisor and both workers",
            CELLS,
        ],
    }


def memory() -> dict[str, Any]:
    kib = {}
    for app in ("mcpgen", "official"):
        with serving("h11", app) as served:
            kib[app] = kib_per_session(served.url, served.pid)
    return {
        "title": f"Streamable HTTP server: resident memory per idle handshake-era session ({MEMORY_SESSIONS})",
        "keys": ["measure"],
        "columns": ["measure", "mcpgen", "official", "ratio"],
        "rows": [
            {
                "measure": "RSS growth per idle session",
                "mcpgen": f"{kib['mcpgen']:.1f} KiB",
                "official": f"{kib['official']:.1f} KiB",
                "ratio": f"{kib['official'] / kib['mcpgen']:.2f}x less",
            }
        ],
        "command": command("--configs", "none", "--no-multi"),
        "notes": ["initialize + notifications/initialized per session, nothing open; h11 stack; one httpx client"],
    }


# -- instructions ----------------------------------------------------------------------------------


def run_counted(stack: str, app: str, era: str, tool: str, calls: int, protocol: str = "uvicorn") -> int:  # noqa: PLR0913
    """Instructions of one run of `servers/drive_asgi.py` under callgrind."""
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
         f"{SERVERS}/drive_asgi.py", stack, app, era, tool, str(calls), protocol],
        cwd=ROOT, capture_output=True, text=True, check=True, env=child_env(PYTHONHASHSEED="0"),
    )  # fmt: skip
    found = re.search(r"Collected : ([\d,]+)", done.stderr)
    assert found, done.stderr[-2000:]
    return int(found.group(1).replace(",", ""))


def per_call(case: tuple[str, str, str, str], calls: int, protocol: str = "uvicorn") -> int:
    stack, app, era, tool = case
    subprocess.run(  # once outside valgrind: both counted runs find the same compiled bytecode
        [sys.executable, f"{SERVERS}/drive_asgi.py", stack, app, era, tool, "0", protocol],
        cwd=ROOT, capture_output=True, check=True, env=child_env(PYTHONHASHSEED="0"),
    )  # fmt: skip
    counted = run_counted(stack, app, era, tool, calls, protocol) - run_counted(stack, app, era, tool, 0, protocol)
    return counted // calls


def counted_cases(options: Options) -> tuple[list[str], list[tuple[str, str, str, str]]]:
    """The eras and the (stack, app, era, tool) cases a one-process count runs (the empty app once an era)."""
    eras = list(dict.fromkeys(era for era, _ in options.configs))
    cases = [
        (stack, app, era, "sync" if app == "empty" else tool)
        for stack in options.stacks
        for era in eras
        for app in options.apps
        for tool in (["-"] if app == "empty" else options.tools)
    ]
    return eras, cases


def instructions(options: Options, calls: int, jobs: int) -> dict[str, Any]:
    if shutil.which("valgrind") is None:
        raise SystemExit("--instructions needs valgrind: apt-get install valgrind")
    eras, cases = counted_cases(options)
    with ThreadPoolExecutor(jobs) as pool:
        counts = dict(zip(cases, pool.map(lambda case: per_call(case, calls, options.protocol), cases), strict=True))
    rows = []
    for stack in options.stacks:
        for era in eras:
            empty = counts.get((stack, "empty", era, "sync"))
            for tool in options.tools:
                row = {"stack": STACK_LABEL[stack], "era": era, "tool": tool}
                row["empty app"] = f"{empty:,}" if empty else ""
                for app in options.apps:
                    if app == "empty":
                        continue
                    count = counts[stack, app, era, tool]
                    row[APP_LABEL[app]] = f"{count:,}"
                    row[f"{APP_LABEL[app]}: empty's share"] = f"{empty / count * 100:.0f}%" if empty else ""
                row["command"] = command(
                    "--instructions", "--stacks", stack, "--configs", f"{era}:1", "--tools", tool,
                    "--calls", str(calls), "--protocol", options.protocol,
                )  # fmt: skip
                rows.append(row)
    print(f"instructions per call: {counts}", flush=True)
    return {
        "title": "Streamable HTTP server: CPU instructions per call (callgrind, uvicorn's protocol in process)"
        + (", mcpgen serve's protocol classes" if options.protocol == "mcpgen" else ""),
        "keys": ["stack", "era", "tool"],
        "columns": [c for c in rows[0] if c != "command"],
        "rows": rows,
        "command": command("--instructions"),
        "notes": [
            "python bench/servers/drive_asgi.py STACK APP ERA TOOL N under valgrind --tool=callgrind,"
            f" N = {calls} and 0 (after the same 50-call warm-up); the difference / N; PYTHONHASHSEED=0",
            "one connection, each request after the previous response; uvicorn's own protocol class, or with"
            " --protocol mcpgen the one mcpgen serve runs (with the head deadline, writing a head with its body)",
            "empty's share: the empty app's instructions / the app's (the rate share when server CPU is the limit)",
        ],
    }


# -- bytecodes -------------------------------------------------------------------------------------


def counted_bytecodes(case: tuple[str, str, str, str], calls: int, protocol: str) -> dict[str, Any]:
    """`servers/drive_asgi.py`'s bytecode report for one case (per call)."""
    stack, app, era, tool = case
    done = subprocess.run(
        [sys.executable, f"{SERVERS}/drive_asgi.py", stack, app, era, tool, str(calls), protocol, "bytecodes"],
        cwd=ROOT, capture_output=True, text=True, check=True, env=child_env(PYTHONHASHSEED="0"),
    )  # fmt: skip
    line = next((line for line in done.stdout.splitlines() if line.startswith("BYTECODES ")), None)
    assert line is not None, done.stdout[-2000:] + done.stderr[-2000:]
    report: dict[str, Any] = json.loads(line.removeprefix("BYTECODES "))
    return report


def bytecodes(options: Options) -> dict[str, Any]:
    _, cases = counted_cases(options)
    reports = {case: counted_bytecodes(case, options.calls, options.protocol) for case in cases}
    rows = []
    for (stack, app, era, tool), report in reports.items():
        empty = reports.get((stack, "empty", era, "sync"))
        rows.append({
            "stack": STACK_LABEL[stack],
            "era": era,
            "app": APP_LABEL.get(app, app),
            "tool": tool if app != "empty" else "",
            "bytecodes a call": f"{report['total']:,.0f}",
            "over the empty app": f"{report['total'] - empty['total']:,.0f}" if empty is not None else "",
            "by who ran them": "; ".join(f"{part} {count:,.0f}" for part, count in report["parts"].items()),
            "most in": "; ".join(f"{where} {count:,.0f}" for where, count in report["top"][:8]),
        })  # fmt: skip
        print(f"  {stack} {app} {era} {tool}: {report['total']:,.0f} bytecodes a call", flush=True)
    return {
        "title": "Streamable HTTP server: Python bytecodes per call (uvicorn's protocol in process)"
        + (", mcpgen serve's protocol classes" if options.protocol == "mcpgen" else ""),
        "keys": ["stack", "era", "app", "tool"],
        "columns": list(rows[0]),
        "rows": rows,
        "command": command("--bytecodes", "--calls", str(options.calls), "--protocol", options.protocol),
        "notes": [
            f"python bench/servers/drive_asgi.py STACK APP ERA TOOL {options.calls} PROTOCOL bytecodes: a sys.settrace"
            " opcode counter over the calls after the 50-call warm-up; the count / calls",
            "Python bytecodes only: the C code behind them (httptools, orjson, pydantic-core, uvloop) is not counted;"
            " the bench harness's own are in 'bench harness'",
        ],
    }


# -- what a call costs the system (--syscalls) ----------------------------------------------------

LOOP_COUNTS = ("loop turns", "waits, blocking", "call_soon", "timers", "timers cancelled", "tasks", "transport writes")
ASYNCIO_ONLY = {"loop turns", "waits, blocking", "timers cancelled", "transport writes"}


def switches(pid: int) -> tuple[int, int]:
    """Voluntary and involuntary context switches of a process's threads, from /proc."""
    voluntary = involuntary = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            for line in (task / "status").read_text().splitlines():
                if line.startswith("voluntary_ctxt_switches:"):
                    voluntary += int(line.split()[1])
                elif line.startswith("nonvoluntary_ctxt_switches:"):
                    involuntary += int(line.split()[1])
    return voluntary, involuntary


def loop_counts(pid: int, path: Path) -> dict[str, int]:
    """What the server's counting loop has counted so far (`servers/counted.py`, on SIGUSR1)."""
    path.unlink(missing_ok=True)
    os.kill(pid, signal.SIGUSR1)
    deadline = time.monotonic() + 30
    while not path.exists():
        if time.monotonic() > deadline:
            raise TimeoutError("the server wrote no counts")
        time.sleep(0.02)
    counts: dict[str, int] = json.loads(path.read_text())
    return counts


def syscall_tracer() -> list[str] | None:
    """The command that counts a process's system calls by kind, to which its pid is added:
    `perf trace -s` (kernel tracepoints: light), else `strace -c -f` (ptrace: slow), else none."""
    if (
        shutil.which("perf")
        and subprocess.run(["perf", "trace", "-s", "--", "true"], capture_output=True, check=False).returncode == 0
    ):
        return ["perf", "trace", "-s", "-p"]
    if shutil.which("strace"):
        return ["strace", "-c", "-f", "-p"]
    return None


@contextmanager
def tracing_syscalls(pid: int, tracer: list[str] | None) -> Iterator[dict[str, int]]:
    """System calls of `pid` by kind while the body runs (filled in when it ends)."""
    found: dict[str, int] = {}
    if tracer is None:
        yield found
        return
    LOGS.mkdir(parents=True, exist_ok=True)
    out = LOGS / "syscalls.txt"
    proc = subprocess.Popen([*tracer, str(pid), "-o", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)  # (attaching takes a moment)
    try:
        yield found
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
    for line in out.read_text().splitlines():
        words = line.split()
        if tracer[0] == "perf" and len(words) >= 4 and words[1].isdigit() and words[0].isidentifier():
            found[words[0]] = found.get(words[0], 0) + int(words[1])  # syscall calls errors total ...
        elif tracer[0] == "strace" and len(words) >= 5 and words[-1].isidentifier() and words[3].isdigit():
            found[words[-1]] = found.get(words[-1], 0) + int(words[3])  # % seconds usecs/call calls [errors] syscall


def count_case(stack: str, app: str, case: Case, options: Options, tracer: list[str] | None) -> dict[str, str]:
    """One case's counts per call: the server's system calls, context switches, loop activity."""
    counts_file = LOGS / "loop-counts.json"
    with serving(stack, app, protocol=options.protocol, counts=counts_file) as served:
        sessions = open_sessions(served.url, case.connections) if case.era == "handshake" else []
        wrk(served, case, sessions, options.warm_up)
        loop_before, switched_before = loop_counts(served.pid, counts_file), switches(served.pid)
        with tracing_syscalls(served.pid, tracer) as calls:
            load = wrk(served, case, sessions, options.seconds)
        loop_after, switched_after = loop_counts(served.pid, counts_file), switches(served.pid)
    n = max(load.requests, 1)

    def each(count: float) -> str:
        return f"{count / n:.2f}"

    row = {
        "stack": STACK_LABEL[stack],
        "protocol": options.protocol,
        "app": APP_LABEL[app],
        "era": case.era,
        "connections": str(case.connections),
        "calls": f"{load.requests:,}",
        "CPU/call (traced)": f"{load.cpu_us:,.0f} us",
        "switches vol/invol": f"{each(switched_after[0] - switched_before[0])}"
        f" / {each(switched_after[1] - switched_before[1])}",
    }
    for name in LOOP_COUNTS:
        counted = stack == "h11" or name not in ASYNCIO_ONLY
        row[name] = each(loop_after.get(name, 0) - loop_before.get(name, 0)) if counted else "-"
    row["system calls"] = each(sum(calls.values())) if calls else "-"
    row["by kind"] = ", ".join(
        f"{name} {each(count)}" for name, count in sorted(calls.items(), key=lambda x: -x[1]) if count / n >= 0.01
    )
    print(f"  {app} {case.era}:{case.connections}: {row}", flush=True)
    return row


def syscalls(options: Options) -> dict[str, Any]:
    tracer = syscall_tracer()
    rows = []
    for stack in options.stacks:
        for era, connections in options.configs:
            for app in options.apps:
                case = Case(era, connections, options.tools[0] if app != "empty" else "sync")
                row = count_case(stack, app, case, options, tracer)
                row["command"] = command(
                    "--syscalls", "--stacks", stack, "--apps", app, "--configs", f"{era}:{connections}",
                    "--tools", case.tool, "--protocol", options.protocol, "--seconds", str(options.seconds),
                )  # fmt: skip
                rows.append(row)
    return {
        "title": "Streamable HTTP server: what each call costs the system (counts per call)",
        "keys": ["stack", "protocol", "app", "era", "connections"],
        "columns": [c for c in rows[0] if c != "command"],
        "rows": rows,
        "command": command(),
        "notes": [
            f"each case: a {options.warm_up} s wrk run, then the counts over a {options.seconds} s wrk run divided by"
            f" its calls; tool: {options.tools[0]}; protocol: uvicorn's own HTTP protocol class, or mcpgen serve's"
            " (uvicorn's with the head deadline)",
            "switches: the server's voluntary / involuntary context switches (/proc/PID/task/*/status)",
            "loop (servers/counted.py): loop turns and the waits among them that may block (asyncio only; on uvloop"
            " the turns are its epoll_pwait calls), callbacks scheduled (call_soon), timers armed (call_later,"
            " call_at) and cancelled (asyncio only), tasks created, transport writes (asyncio only)",
            "system calls: "
            + (f"{' '.join(tracer[:-1])} -p PID over the run (CPU/call includes its cost)" if tracer else "no tracer"),
        ],
    }


def parse(argv: list[str] | None = None) -> Options:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--seconds", type=int, default=5, help="length of each measured wrk run (whole seconds)")
    parser.add_argument("--warm-up", type=int, default=1, help="length of the wrk run before each measurement")
    parser.add_argument("--stacks", default="h11,httptools", help="h11 and/or httptools (skipped when not installed)")
    parser.add_argument("--apps", default=",".join(APPS))
    parser.add_argument(
        "--configs", default="modern:1,modern:50,handshake:1,handshake:50", help="ERA:CONNECTIONS,... or none"
    )
    parser.add_argument("--tools", default="sync,async")
    parser.add_argument(
        "--multi", default="mcpgen,uvicorn,bound", help="ways to start several workers (mcpgen, uvicorn, bound)"
    )
    parser.add_argument("--multi-connections", default="50,1", help="connections for the runs on several workers")
    parser.add_argument("--no-multi", action="store_true")
    parser.add_argument(
        "--pin",
        action="store_true",
        help="one-worker runs: the server on one CPU of its own, wrk on the others (needs two CPUs or more)",
    )
    parser.add_argument("--no-memory", action="store_true")
    parser.add_argument("--instructions", action="store_true", help="count instructions per call instead (callgrind)")
    parser.add_argument(
        "--bytecodes", action="store_true", help="count Python bytecodes per call instead, by who ran them"
    )
    parser.add_argument("--calls", type=int, default=200, help="calls per counted run (--instructions, --bytecodes)")
    parser.add_argument("--jobs", type=int, default=1, help="counted runs at once (--instructions)")
    parser.add_argument(
        "--syscalls",
        action="store_true",
        help="count per call instead: system calls by kind, context switches, loop turns, timers, tasks, writes",
    )
    parser.add_argument(
        "--protocol",
        choices=("uvicorn", "mcpgen"),
        default="uvicorn",
        help="uvicorn's own HTTP protocol class, or mcpgen serve's (with the head deadline), for every app",
    )
    args = parser.parse_args(argv)
    stacks = [s for s in args.stacks.split(",") if s]
    for stack in list(stacks):
        if stack == "httptools" and not all(importlib.util.find_spec(m) for m in ("httptools", "uvloop")):
            print("httptools + uvloop not installed (pip install httptools uvloop): h11 stack only", flush=True)
            stacks.remove(stack)
    chosen = [c for c in args.configs.split(",") if c and c != "none"]
    configs = [(era, int(n)) for era, n in (c.split(":") for c in chosen)]
    return Options(
        seconds=args.seconds,
        warm_up=args.warm_up,
        stacks=stacks,
        apps=[a for a in args.apps.split(",") if a],
        configs=configs,
        tools=[t for t in args.tools.split(",") if t],
        multi=[] if args.no_multi else [m for m in args.multi.split(",") if m],
        multi_connections=[int(n) for n in args.multi_connections.split(",") if n],
        memory=not args.no_memory,
        instructions=args.instructions,
        bytecodes=args.bytecodes,
        calls=args.calls,
        jobs=args.jobs,
        syscalls=args.syscalls,
        protocol=args.protocol,
        pin=args.pin,
    )


def main() -> None:
    options = parse()
    if options.instructions:
        save_tables("http_instructions", [instructions(options, options.calls, options.jobs)])
        return
    if options.bytecodes:
        save_tables("http_bytecodes", [bytecodes(options)])
        return
    ensure_wrk()
    if options.syscalls:
        save_tables("http_syscalls", [syscalls(options)])
        return
    tables = []
    if options.configs:
        tables.append(single_worker(options))
    if options.multi:
        tables.append(multi_worker(options))
    if options.memory:
        tables.append(memory())
    save_tables("http", tables)


if __name__ == "__main__":
    main()
