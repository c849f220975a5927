"""A protected mcpgen server and the test authorization server (`auth_server.AuthServer`), both
served for real on loopback ports (uvicorn on asyncio, hypercorn on trio), for end-to-end tests of
the mcpgen client with OAuth against them."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import Any

import anyio
from mcpgen.runtime import Server
from mcpgen.runtime.auth import JWTVerifier, ProtectedResource, TokenVerifier
from mcpgen.runtime.server.http.run import bind, serve_http
from mcpgen.runtime.server.http.security import HttpSecurity

from support.auth_server import AuthServer


class Plain:
    """A plain ASGI app (no lifespan, no streams) made servable by `serve_http` (which reads an
    app's `security` for its head timeout and closes its streams on shutdown)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.security = HttpSecurity()

    def close_streams(self) -> None:
        pass

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "lifespan":
            await self.app(scope, receive, send)
            return
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return


@dataclass
class Deployment:
    """Where things are: the MCP endpoint, its authorization server, the protection in use."""

    url: str
    auth_server: AuthServer
    protection: ProtectedResource
    verifier: TokenVerifier


def jwt_verifier(auth_server: AuthServer, audience: str, leeway: float = 0.0) -> JWTVerifier:
    return JWTVerifier(
        issuer=auth_server.issuer, audience=audience, jwks_uri=auth_server.endpoint("jwks"), leeway=leeway
    )


@asynccontextmanager
async def deployed(
    server: Server,
    *,
    scopes_supported: list[str] | None = None,
    required_scopes: tuple[str, ...] = (),
    verifier: Callable[[AuthServer, str], TokenVerifier] = jwt_verifier,
    protection: Callable[[str, str], ProtectedResource] | None = None,
    **auth_server_options: Any,
) -> AsyncIterator[Deployment]:
    """Serve `server` protected by a fresh authorization server (both on loopback ports) for the
    body of the `async with`, in the running event loop. The protection is built here from the
    options, or by `protection(url, issuer)`."""
    as_sock, mcp_sock = bind("127.0.0.1", 0), bind("127.0.0.1", 0)
    auth_server = AuthServer(issuer=f"http://127.0.0.1:{as_sock.getsockname()[1]}", **auth_server_options)
    url = f"http://127.0.0.1:{mcp_sock.getsockname()[1]}/mcp"
    if protection is None:
        guard = ProtectedResource(
            resource=url,
            authorization_servers=[auth_server.issuer],
            verifier=verifier(auth_server, url),
            scopes_supported=scopes_supported,
            required_scopes=required_scopes,
        )
    else:
        guard = protection(url, auth_server.issuer)
    stop = anyio.Event()
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: serve_http(Plain(auth_server.app), sockets=[as_sock], shutdown=stop))  # type: ignore[arg-type]
            tg.start_soon(lambda: serve_http(server.http_app(auth=guard), sockets=[mcp_sock], shutdown=stop))
            try:
                yield Deployment(url, auth_server, guard, guard.verifier)
            finally:
                stop.set()
    finally:
        as_sock.close()
        mcp_sock.close()


@contextmanager
def deployed_in_thread(server: Server, **options: Any) -> Iterator[Deployment]:
    """`deployed`, served by a thread of its own (asyncio): for code that runs its own event loop,
    such as the command line."""
    ready: list[Deployment] = []
    started, finish = threading.Event(), threading.Event()

    async def run() -> None:
        async with deployed(server, **options) as deployment:
            ready.append(deployment)
            started.set()
            await anyio.to_thread.run_sync(finish.wait)

    thread = threading.Thread(target=anyio.run, args=(run,), daemon=True)
    thread.start()
    started.wait(60)
    try:
        assert ready, "the servers did not start"
        yield ready[0]
    finally:
        finish.set()
        thread.join(60)
