"""One server process's work per POST, without a socket: uvicorn's own HTTP protocol (h11 on asyncio
or httptools on uvloop) fed request bytes through a transport that keeps what is written, in turn,
one connection, each request after the previous response is complete. Everything the server
does for a request (parsing, the ASGI app, writing the response) runs; the kernel and the client
do not. `bench_http.py --instructions` runs it under callgrind with 0 and with N calls;
`bench_http.py --bytecodes` runs it once with COUNT `bytecodes`: the Python bytecodes executed
for the N calls after the warm-up, by who ran them (printed as one JSON line, per call).

    python bench/servers/drive_asgi.py STACK APP ERA TOOL CALLS [PROTOCOL] [COUNT]
        STACK: h11 | httptools; APP: empty | floor | mcpgen | official_json; ERA: modern | handshake
        PROTOCOL: uvicorn (its own protocol class, the default) | mcpgen (mcpgen serve's: uvicorn's
        with the head deadline, writing a response's head with its body)
        COUNT: bytecodes (count them, see `Bytecodes`), or nothing
"""

from __future__ import annotations

import asyncio
import collections
import json
import sys
import sysconfig
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import FrameType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import apps

WARM_UP = 50
V25, V26 = "2025-11-25", "2026-07-28"
TOOLS = {"sync": "add", "async": "add_async"}


class Transport(asyncio.Transport):
    """Keeps what the protocol writes; never closes for real."""

    def __init__(self) -> None:
        super().__init__()
        self.written: list[bytes] = []
        self.closing = False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"sockname": ("127.0.0.1", 8000), "peername": ("127.0.0.1", 50000)}.get(name, default)

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written.append(bytes(data))

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.closing = True

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


def head(headers: dict[str, str]) -> bytes:
    """A POST's head up to its `Content-Length` line (which follows it), without that line."""
    lines = [
        "POST /mcp HTTP/1.1",
        "Host: 127.0.0.1:8000",
        "Content-Type: application/json",
        "Accept: application/json, text/event-stream",
        *(f"{k}: {v}" for k, v in headers.items()),
    ]
    return "\r\n".join(lines).encode()


def post(body: dict[str, Any], headers: dict[str, str]) -> bytes:
    raw = json.dumps(body, separators=(",", ":")).encode()
    return head(headers) + b"\r\nContent-Length: %d\r\n\r\n" % len(raw) + raw


class Calls:
    """The `tools/call` POSTs of one era and tool, each with its own id, made by one bytes format per
    call (the JSON text and the head are fixed but for the id and the Content-Length that follows
    from its digits): what the driver itself spends a call stays small next to the server's work,
    and is the same for every app."""

    def __init__(self, era: str, tool: str, session: str | None) -> None:
        name = TOOLS[tool]
        params: dict[str, Any] = {"name": name, "arguments": {"a": 1, "b": 2}}
        if era == "modern":
            params["_meta"] = {
                "io.modelcontextprotocol/protocolVersion": V26,
                "io.modelcontextprotocol/clientCapabilities": {},
            }
            headers = {"Mcp-Protocol-Version": V26, "Mcp-Method": "tools/call", "Mcp-Name": name}
        else:
            headers = {"Mcp-Protocol-Version": V25, "Mcp-Session-Id": session or ""}
        marker = -123456789  # a number no body has otherwise
        raw = json.dumps(
            {"jsonrpc": "2.0", "id": marker, "method": "tools/call", "params": params}, separators=(",", ":")
        )
        before, after = raw.encode().split(str(marker).encode())
        self.format = (
            head(headers).replace(b"%", b"%%")
            + b"\r\nContent-Length: %d\r\n\r\n"
            + before.replace(b"%", b"%%")
            + b"%d"
            + after.replace(b"%", b"%%")
        )
        self.fixed = len(before) + len(after)

    def __call__(self, n: int) -> bytes:
        return self.format % (self.fixed + len(b"%d" % n), n)


class Bytecodes:
    """Counts the Python bytecodes run (a `sys.settrace` tracer asking for opcode events), by code
    object, while on. Exact and load-independent, but Python's share only: what C code (parsers,
    validators, the event loop's own) does for a bytecode is not in it. Parts: who ran them."""

    PARTS = (  # (part, a path fragment of its files): the first that matches
        ("mcpgen runtime", "/runtime/"),
        ("mcpgen generated", "/generated/"),
        ("uvicorn", "/uvicorn/"),
        ("h11", "/h11/"),
        ("anyio", "/anyio/"),
        ("official SDK", "/mcp/"),
        ("pydantic", "/pydantic/"),
        ("starlette", "/starlette/"),
        ("bench apps (empty, floor)", "/bench/servers/apps.py"),
        ("bench harness", "/bench/servers/"),
        ("asyncio", "/asyncio/"),
        ("made by dataclasses", "<string>"),  # (the `__init__` a dataclass writes has no file)
        ("other standard library", sysconfig.get_paths()["stdlib"]),
        ("other standard library", "<frozen "),  # (modules frozen into the interpreter)
    )

    def __init__(self) -> None:
        self.counts: collections.Counter[Any] = collections.Counter()

    def _trace(self, frame: FrameType, event: str, arg: Any) -> Any:
        frame.f_trace_opcodes = True
        frame.f_trace_lines = False
        return self._opcode

    def _opcode(self, frame: FrameType, event: str, arg: Any) -> Any:
        if event == "opcode":
            self.counts[frame.f_code] += 1
        return self._opcode

    def start(self) -> None:
        sys.settrace(self._trace)

    def stop(self) -> None:
        sys.settrace(None)

    def report(self, calls: int) -> dict[str, Any]:
        """Per call: the total, by part, and the 15 functions that ran the most."""
        parts: collections.Counter[str] = collections.Counter()
        for code, count in self.counts.items():
            part = next((name for name, where in self.PARTS if where in code.co_filename), "other")
            parts[part] += count
        top = [
            (f"{Path(code.co_filename).name}:{code.co_firstlineno} {code.co_name}", round(count / calls, 1))
            for code, count in self.counts.most_common(15)
        ]
        total = sum(parts.values())
        return {
            "total": round(total / calls, 1),
            "parts": {name: round(count / calls, 1) for name, count in parts.most_common()},
            "top": top,
        }


async def run_calls(
    exchange: Callable[[bytes], Awaitable[bytes]], request: Calls, calls: int, bytecodes: Bytecodes | None
) -> None:
    """The warm-up's calls, then the measured ones (their bytecodes counted, when asked), each answer checked."""
    for n in range(1, WARM_UP + calls + 1):
        if n == WARM_UP + 1 and bytecodes is not None:
            bytecodes.start()
        answer = await exchange(request(n))
        if b'"result"' not in answer or b" 200 " not in answer.split(b"\r\n", 1)[0]:
            raise SystemExit(f"bad answer: {answer[:300]!r}")
    if bytecodes is not None:
        bytecodes.stop()
        print("BYTECODES " + json.dumps(bytecodes.report(calls)), flush=True)


async def main(  # noqa: PLR0913
    stack: str, app_name: str, era: str, tool: str, calls: int, protocol: str = "uvicorn", count: str = ""
) -> None:
    from uvicorn.config import Config
    from uvicorn.lifespan.on import LifespanOn
    from uvicorn.server import ServerState

    if protocol == "mcpgen" and stack == "httptools":
        from mcpgen.runtime.server.http.protocols import TimedHttpToolsProtocol as Base
    elif protocol == "mcpgen":
        from mcpgen.runtime.server.http.protocols import TimedH11Protocol as Base  # type: ignore[assignment]
    elif stack == "httptools":
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as Base  # type: ignore[assignment]
    else:
        from uvicorn.protocols.http.h11_impl import H11Protocol as Base  # type: ignore[assignment]

    class Protocol(Base):  # type: ignore[misc, valid-type]
        done: asyncio.Future[None] | None = None

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if self.done is not None and not self.done.done():
                self.done.set_result(None)

    try:  # valgrind runs ~50x slower: a handler must not outlive the watcher's delay for that alone
        from mcpgen.runtime.server.http import asgi, modern

        asgi.WATCH_AFTER = modern.WATCH_AFTER = 60.0  # (modern's: where an earlier version kept it)
    except ImportError:
        pass
    app = getattr(apps, {"mcpgen": "mcpgen_app", "official_json": "official_json"}.get(app_name, app_name))()
    config = Config(app, http=Protocol, lifespan="on", log_level="warning", access_log=False)
    config.load()
    lifespan = LifespanOn(config)
    await lifespan.startup()
    loop = asyncio.get_running_loop()
    transport = Transport()
    protocol = Protocol(config=config, server_state=ServerState(), app_state=lifespan.state, _loop=loop)
    protocol.connection_made(transport)

    async def exchange(data: bytes) -> bytes:
        protocol.done = loop.create_future()
        protocol.data_received(data)
        await protocol.done
        out = b"".join(transport.written)
        transport.written.clear()
        return out

    session = None
    if era == "handshake":
        init = {"protocolVersion": V25, "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}
        opened = await exchange(post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}, {}))
        head = opened.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
        session = next(line.split(":", 1)[1].strip() for line in head if line.lower().startswith("mcp-session-id:"))
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        await exchange(post(note, {"Mcp-Protocol-Version": V25, "Mcp-Session-Id": session}))
    await run_calls(exchange, Calls(era, tool, session), calls, Bytecodes() if count == "bytecodes" else None)
    transport.close()
    protocol.connection_lost(None)
    await lifespan.shutdown()


if __name__ == "__main__":
    stack, app_name, era, tool, calls = sys.argv[1:6]
    protocol = sys.argv[6] if len(sys.argv) > 6 else "uvicorn"
    count = sys.argv[7] if len(sys.argv) > 7 else ""
    if stack == "httptools":
        import uvloop

        uvloop.install()
    asyncio.run(main(stack, app_name, era, tool, int(calls), protocol, count))
