"""A scripted HTTP/1.1 server for the HTTP client tests: real loopback sockets (anyio, so it runs on
asyncio and trio), h11 for the framing, and a handler that answers each request the way a test
needs, down to closing a connection mid-stream. Every request is recorded with the connection it
came on and the time it arrived; `arrived` lets a test wait for the next one."""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import h11
from anyio.abc import SocketStream, TaskGroup


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    body: bytes
    connection: int
    at: float

    @property
    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def rpc_method(self) -> str | None:
        if self.method != "POST":
            return None
        method = self.json.get("method")
        return method if isinstance(method, str) else None


class Reply:
    """The response to one request: whole (`json`, `send`) or streamed (`sse`, `event`, `end`),
    or the connection dropped (`abort`). `closed` is set if the client goes away mid-stream."""

    def __init__(self, conn: h11.Connection, stream: SocketStream, tg: TaskGroup) -> None:
        self.conn, self.stream, self.tg = conn, stream, tg
        self.started = False
        self.finished = False
        self.aborted = False
        self.closed = anyio.Event()
        self.closed_at: float | None = None
        self._watch: anyio.CancelScope | None = None
        self._watch_done = anyio.Event()

    async def _write(self, event: Any) -> None:
        data = self.conn.send(event)
        if data:
            await self.stream.send(data)

    async def send(
        self,
        status: int,
        body: bytes = b"",
        *,
        content_type: str | None = None,
        headers: Iterable[tuple[str, str]] = (),
    ) -> None:
        fields = [*headers, ("content-length", str(len(body)))]
        if content_type is not None:
            fields.append(("content-type", content_type))
        await self._write(h11.Response(status_code=status, headers=fields))
        if body:
            await self._write(h11.Data(data=body))
        await self._write(h11.EndOfMessage())
        self.started = self.finished = True

    async def json(self, message: Any, status: int = 200, headers: Iterable[tuple[str, str]] = ()) -> None:
        await self.send(status, json.dumps(message).encode(), content_type="application/json", headers=headers)

    async def sse(self, headers: Iterable[tuple[str, str]] = ()) -> None:
        fields = [*headers, ("content-type", "text/event-stream"), ("transfer-encoding", "chunked")]
        await self._write(h11.Response(status_code=200, headers=fields))
        self.started = True
        await self.tg.start(self._watch_close)

    async def event(
        self, message: Any = None, *, id: str | None = None, retry: int | None = None, raw: bytes | None = None
    ) -> None:
        if raw is None:
            lines = []
            if id is not None:
                lines.append(f"id: {id}")
            if retry is not None:
                lines.append(f"retry: {retry}")
            lines.append("data: " + ("" if message is None else json.dumps(message)))
            raw = ("\n".join(lines) + "\n\n").encode()
        await self._write(h11.Data(data=raw))

    async def _stop_watching(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
            await self._watch_done.wait()

    async def end(self) -> None:
        """Finish the stream (the client sees its end)."""
        await self._stop_watching()
        self.closed_at = anyio.current_time()  # before the client can see the end
        await self._write(h11.EndOfMessage())
        self.finished = True

    async def abort(self) -> None:
        """Drop the connection now, whatever was sent."""
        self.aborted = True
        self.closed_at = anyio.current_time()
        await self._stop_watching()
        await self.stream.aclose()

    async def _watch_close(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        try:
            with anyio.CancelScope() as self._watch:
                task_status.started()
                try:
                    await self.stream.receive()  # a client waiting for this response sends nothing until it goes
                except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                    pass
                self.closed.set()
        finally:
            self._watch_done.set()


Handler = Callable[[Received, Reply], Awaitable[None]]


class HttpPeer:
    """The server: `url`, `requests` (all of them, in order), `arrived` (set on each new request)."""

    def __init__(self, handler: Handler, port: int) -> None:
        self.handler = handler
        self.url = f"http://127.0.0.1:{port}/mcp"
        self.requests: list[Received] = []
        self.arrived = anyio.Event()
        self._connections = itertools.count(1)
        self.connections = 0

    def posts(self, rpc_method: str | None = None) -> list[Received]:
        return [r for r in self.requests if r.method == "POST" and (rpc_method is None or r.rpc_method == rpc_method)]

    async def wait_for(self, predicate: Callable[[Received], bool]) -> Received:
        """The first request (so far or to come) that `predicate` accepts."""
        while True:
            for request in self.requests:
                if predicate(request):
                    return request
            await self.arrived.wait()

    async def serve(self, stream: SocketStream) -> None:
        number = next(self._connections)
        self.connections = number
        conn = h11.Connection(h11.SERVER)
        async with stream, anyio.create_task_group() as tg:
            while True:
                request = await _read_request(conn, stream, number)
                if request is None:
                    break
                self.requests.append(request)
                self.arrived.set()
                self.arrived = anyio.Event()
                reply = Reply(conn, stream, tg)
                await self.handler(request, reply)
                if reply.aborted:
                    break
                if not reply.started:
                    await reply.send(500, b"the test handler sent nothing")
                elif not reply.finished:
                    await reply.end()
                if conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
                    break
                conn.start_next_cycle()
            tg.cancel_scope.cancel()


async def _read_request(conn: h11.Connection, stream: SocketStream, number: int) -> Received | None:
    head: h11.Request | None = None
    body = bytearray()
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            try:
                conn.receive_data(await stream.receive(65536))
            except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                conn.receive_data(b"")
            continue
        if isinstance(event, h11.Request):
            head = event
        elif isinstance(event, h11.Data):
            body += event.data
        elif isinstance(event, h11.EndOfMessage) and head is not None:
            headers = {name.decode().lower(): value.decode() for name, value in head.headers}
            return Received(
                head.method.decode(), head.target.decode(), headers, bytes(body), number, anyio.current_time()
            )
        elif isinstance(event, h11.ConnectionClosed) or event is h11.PAUSED:
            return None


@asynccontextmanager
async def http_peer(handler: Handler) -> AsyncIterator[HttpPeer]:
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    peer = HttpPeer(handler, port)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, peer.serve)
        yield peer
        tg.cancel_scope.cancel()


@dataclass
class Script:
    """A small MCP server for the transport tests, in either era. Override what a test needs."""

    tools: list[dict[str, Any]] = field(default_factory=list)
    session_id: str | None = "session-1"
    get_status: int = 405  # 405: no GET stream; 200: an SSE stream that `on_get` fills
    delete_status: int = 200  # 405: the server does not let clients end sessions
    version: str = "2025-11-25"

    async def __call__(self, request: Received, reply: Reply) -> None:
        if request.method == "GET":
            await self.on_get(request, reply)
        elif request.method == "DELETE":
            await reply.send(self.delete_status)
        else:
            message = request.json
            if "id" not in message or "method" not in message:
                await reply.send(202)
            else:
                await self.on_request(request, message, reply)

    async def on_get(self, request: Received, reply: Reply) -> None:
        await reply.send(self.get_status)

    async def on_request(self, request: Received, message: dict[str, Any], reply: Reply) -> None:
        method, rid = message["method"], message["id"]
        modern = "io.modelcontextprotocol/protocolVersion" in (message.get("params") or {}).get("_meta", {})
        if method == "server/discover":
            result: dict[str, Any] = {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}}
        elif method == "initialize":
            result = {
                "protocolVersion": self.version,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "s", "version": "1"},
            }
            headers = [("mcp-session-id", self.session_id)] if self.session_id else []
            await reply.json({"jsonrpc": "2.0", "id": rid, "result": result}, headers=headers)
            return
        elif method == "tools/list":
            result = {"tools": self.tools}
        elif method == "tools/call":
            result = {"content": [{"type": "text", "text": f"called {message['params']['name']}"}]}
        else:
            result = {}
        if modern:
            result = {"resultType": "complete", **result}
            if method in ("tools/list", "server/discover"):
                result.update(ttlMs=0, cacheScope="private")
        await reply.json({"jsonrpc": "2.0", "id": rid, "result": result})
