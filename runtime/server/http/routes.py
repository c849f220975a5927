"""Custom routes of the HTTP app: a health check, a readiness probe, a webhook, next to the MCP endpoint.

    @server.custom_route("/health")
    async def health(request: HttpRequest) -> dict[str, str]:
        return {"status": "ok"}

A handler gets the request (method, path, query string, headers, `await request.body()`) and
returns a `str` (text), `bytes`, a JSON value (dict or list), or an `HttpReply` for full control
(status, content type, headers). It may be a plain `def`: it runs in a worker thread. Custom
routes are served before the MCP endpoint's checks, so they are public (no Host/Origin check, no
`auth=`); mount the app in Starlette or FastAPI for anything richer.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Union

import anyio.to_thread

from ..features.calling import is_coroutine_function
from .asgi import HttpResponse, Receive, Scope, headers_of, read_body

RouteResult = Union["HttpReply", str, bytes, dict[str, Any], list[Any]]
RouteHandler = Callable[["HttpRequest"], Awaitable[RouteResult] | RouteResult]
MAX_ROUTE_BODY = 1024 * 1024


@dataclass(frozen=True)
class HttpReply:
    """A custom route's full answer."""

    body: bytes | str = b""
    status: int = 200
    content_type: str = "text/plain; charset=utf-8"
    headers: Mapping[str, str] = field(default_factory=dict)


class HttpRequest:
    """What a custom route handler gets."""

    def __init__(self, scope: Scope, receive: Receive) -> None:
        self.scope = scope
        self.method: str = str(scope.get("method", "GET"))
        self.path: str = str(scope.get("path", "/"))
        self.query: str = bytes(scope.get("query_string") or b"").decode("latin-1")
        self.headers: dict[str, str] = headers_of(scope)
        self._receive = receive
        self._body: bytes | None = None

    async def body(self, limit: int = MAX_ROUTE_BODY) -> bytes:
        """The request body (`ValueError` past `limit` bytes)."""
        if self._body is None:
            found = await read_body(self._receive, limit)
            if found is None:
                raise ValueError(f"the request body is over {limit} bytes")
            self._body = found
        return self._body


def check_route(path: str, taken: Mapping[str, Any]) -> str:
    """A route path as it is matched (leading slash, no trailing one); `ValueError` if taken."""
    if not path.startswith("/"):
        raise ValueError(f"a route path starts with '/': {path!r}")
    normal = path.rstrip("/") or "/"
    if normal in taken:
        raise ValueError(f"the route {normal!r} is registered already")
    return normal


def _reply(value: Any) -> HttpReply:
    if isinstance(value, HttpReply):
        return value
    if isinstance(value, str):
        return HttpReply(value)
    if isinstance(value, (bytes, bytearray)):
        return HttpReply(bytes(value), content_type="application/octet-stream")
    return HttpReply(json.dumps(value), content_type="application/json")


async def serve_route(handler: RouteHandler, scope: Scope, receive: Receive, exchange: HttpResponse) -> None:
    """Run a custom route's handler and write its answer."""
    request = HttpRequest(scope, receive)
    if is_coroutine_function(handler):
        value = await handler(request)  # type: ignore[misc]  # an async handler's awaitable
    else:
        value = await anyio.to_thread.run_sync(handler, request)
        if isinstance(value, Awaitable):
            value = await value
    reply = _reply(value)
    body = reply.body.encode() if isinstance(reply.body, str) else reply.body
    headers = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in reply.headers.items()]
    await exchange.respond(reply.status, body, reply.content_type.encode("latin-1"), headers)
