"""Test plumbing: a tiny ASGI request/response layer and an httpx transport that routes each host
to an in-process ASGI app (so the client, the authorization servers and the MCP server all run in
the test's event loop, on asyncio and on trio)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

import httpx

Headers = list[tuple[bytes, bytes]]


@dataclass
class Req:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes
    scope: dict[str, Any] = field(repr=False, default_factory=dict)

    def form(self) -> dict[str, str]:
        return dict(parse_qsl(self.body.decode(), keep_blank_values=True))

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Resp:
    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)


def json_resp(status: int, doc: Any, headers: dict[str, str] | None = None) -> Resp:
    return Resp(status, json.dumps(doc).encode(), {"content-type": "application/json", **(headers or {})})


def asgi(handler: Callable[[Req], Awaitable[Resp]]) -> Callable[..., Awaitable[None]]:
    """An ASGI app from `async handler(Req) -> Resp`."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        assert scope["type"] == "http"
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers: dict[str, str] = {}
        for k, v in scope["headers"]:
            headers.setdefault(k.decode("latin-1").lower(), v.decode("latin-1"))
        req = Req(
            scope["method"],
            scope["path"],
            dict(parse_qsl(scope.get("query_string", b"").decode(), keep_blank_values=True)),
            headers,
            body,
            scope,
        )
        resp = await handler(req)
        raw = [(k.encode(), v.encode()) for k, v in resp.headers.items()]
        await send({"type": "http.response.start", "status": resp.status, "headers": raw})
        await send({"type": "http.response.body", "body": resp.body})

    return app


class Router(httpx.AsyncBaseTransport):
    """Routes requests by host to ASGI apps; records every request it routes."""

    def __init__(self, apps: dict[str, Any] | None = None) -> None:
        self.apps: dict[str, Any] = dict(apps or {})
        self.log: list[tuple[str, str, str]] = []  # (method, host, path)

    def mount(self, host: str, app: Any) -> None:
        self.apps[host] = app

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        host = request.url.host
        self.log.append((request.method, host, request.url.path))
        app = self.apps.get(host)
        if app is None:
            raise httpx.ConnectError(f"no route to {host}", request=request)
        return await httpx.ASGITransport(app=app).handle_async_request(request)

    def paths(self, host: str) -> list[str]:
        return [p for _, h, p in self.log if h == host]


def routed_client(router: Router) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=router, timeout=10)
