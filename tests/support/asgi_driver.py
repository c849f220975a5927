"""Drive an ASGI app in-process, with streaming responses and client disconnects (what httpx's
ASGITransport cannot do: it waits for the whole response)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream

V25 = "2025-11-25"
V26 = "2026-07-28"
ACCEPT = "application/json, text/event-stream"


def meta(version: str = V26, caps: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": caps or {},
        **extra,
    }


def modern_headers(method: str, name: str | None = None, version: str = V26, **more: str) -> dict[str, str]:
    headers = {"mcp-protocol-version": version, "mcp-method": method}
    if name is not None:
        headers["mcp-name"] = name
    headers.update(more)
    return headers


def request(id: Any, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        message["params"] = params
    return message


@dataclass
class Event:
    id: str | None = None
    data: str | None = None
    retry: int | None = None
    comment: bool = False

    def json(self) -> Any:
        assert self.data is not None
        return json.loads(self.data)


@dataclass
class Reply:
    """One response being received."""

    status: int
    headers: dict[str, str]
    _chunks: MemoryObjectReceiveStream[bytes]
    _disconnect: anyio.Event
    body: bytes = b""
    _buffer: str = field(default="")

    @property
    def sse(self) -> bool:
        return self.headers.get("content-type", "").startswith("text/event-stream")

    async def read(self) -> bytes:
        async for chunk in self._chunks:
            self.body += chunk
        return self.body

    async def json(self) -> Any:
        return json.loads(await self.read())

    async def events(self) -> AsyncIterator[Event]:
        """SSE events (and comments) as they arrive, until the response ends."""
        async for chunk in self._chunks:
            self._buffer += chunk.decode()
            while "\n\n" in self._buffer:
                block, self._buffer = self._buffer.split("\n\n", 1)
                event = Event()
                for line in block.split("\n"):
                    if line.startswith(":"):
                        event.comment = True
                    elif line.startswith("id: "):
                        event.id = line[4:]
                    elif line.startswith("retry: "):
                        event.retry = int(line[7:])
                    elif line.startswith("data: "):
                        event.data = (event.data + "\n" if event.data else "") + line[6:]
                yield event

    async def messages(self) -> list[Any]:
        """Every JSON-RPC message of the response (JSON body or SSE events), until it ends."""
        if not self.sse:
            return [await self.json()]
        return [e.json() for e in [e async for e in self.events()] if e.data]

    def disconnect(self) -> None:
        self._disconnect.set()


class AsgiClient:
    """Requests against an ASGI app, each in a task of the client's task group."""

    def __init__(self, app: Any, tg: anyio.abc.TaskGroup, server: tuple[str, int] = ("127.0.0.1", 8000)) -> None:
        self.app = app
        self.tg = tg
        self.server = server
        self.host = f"{server[0]}:{server[1]}"
        self.replies: list[Reply] = []  # their streams are closed with the client

    async def send(
        self,
        method: str,
        body: bytes | Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        *,
        path: str = "/mcp",
        content_type: str | None = "application/json",
        accept: str | None = ACCEPT,
        root_path: str = "",
    ) -> Reply:
        raw = body if isinstance(body, bytes) else json.dumps(body).encode() if body is not None else b""
        all_headers: dict[str, str] = {"host": self.host}
        if content_type is not None and method == "POST":
            all_headers["content-type"] = content_type
        if accept is not None:
            all_headers["accept"] = accept
        all_headers.update({k.lower(): v for k, v in (headers or {}).items()})
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": root_path + path,
            "root_path": root_path,
            "query_string": b"",
            "headers": [(k.encode(), v.encode()) for k, v in all_headers.items()],
            "server": self.server,
            "client": ("127.0.0.1", 50000),
        }
        sent_body = False
        disconnect = anyio.Event()
        chunks_in, chunks_out = anyio.create_memory_object_stream[bytes](1000)
        started: list[dict[str, Any]] = []
        ready = anyio.Event()

        complete = anyio.Event()

        async def receive() -> dict[str, Any]:
            # Like ASGI servers: a pending receive is answered with a disconnect when the
            # client goes away or the response is complete.
            nonlocal sent_body
            if not sent_body:
                sent_body = True
                return {"type": "http.request", "body": raw, "more_body": False}
            async with anyio.create_task_group() as tg:

                async def wait(event: anyio.Event) -> None:
                    await event.wait()
                    tg.cancel_scope.cancel()

                tg.start_soon(wait, disconnect)
                tg.start_soon(wait, complete)
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            if disconnect.is_set():
                raise OSError("the client disconnected")
            if message["type"] == "http.response.start":
                started.append(message)
                ready.set()
            elif message["type"] == "http.response.body":
                if message.get("body"):
                    await chunks_in.send(message["body"])
                if not message.get("more_body", False):
                    chunks_in.close()
                    complete.set()

        async def run() -> None:
            try:
                await self.app(scope, receive, send)
            finally:
                chunks_in.close()
                ready.set()

        self.tg.start_soon(run)
        await ready.wait()
        assert started, "the app returned without answering"
        headers_out = {k.decode().lower(): v.decode() for k, v in started[0]["headers"]}
        reply = Reply(started[0]["status"], headers_out, chunks_out, disconnect)
        self.replies.append(reply)
        return reply

    async def post(
        self, message: Mapping[str, Any] | bytes, headers: Mapping[str, str] | None = None, **kw: Any
    ) -> Reply:
        return await self.send("POST", message, headers, **kw)


@asynccontextmanager
async def asgi_client(
    app: Any, *, server: tuple[str, int] = ("127.0.0.1", 8000), run: bool = True
) -> AsyncIterator[AsgiClient]:
    """An in-process client of `app` (an `HttpApp`, run for the duration unless `run=False`)."""
    async with anyio.create_task_group() as tg:
        client = AsgiClient(app, tg, server)
        try:
            if run:
                async with app.run():
                    yield client
            else:
                yield client
            tg.cancel_scope.cancel()
        finally:
            for reply in client.replies:
                reply._chunks.close()
