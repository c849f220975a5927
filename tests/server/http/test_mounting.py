"""The HTTP app mounted in Starlette and FastAPI (the real packages): the server's lifespan runs
once, inside the outer application's, both eras are served under the mount's prefix, custom
routes are reachable next to the endpoint, and the outer app's own routes keep working."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx
import pytest
from mcpgen.runtime import Client, RequestContext, Server
from mcpgen.runtime.client.http import Http
from mcpgen.runtime.server.http.routes import HttpReply, HttpRequest
from mcpgen.runtime.server.http.run import bind

pytestmark = pytest.mark.anyio
BASE = "http://127.0.0.1:8000"


@dataclass
class Pool:
    """What the server's lifespan opens once."""

    opened: int = 0
    closed: int = 0
    events: list[str] = field(default_factory=list)


def make_server(pool: Pool, *, fail: bool = False) -> Server[Pool]:
    @asynccontextmanager
    async def lifespan(server: Server[Any]) -> AsyncIterator[Pool]:
        if fail:
            raise RuntimeError("the database is down")
        pool.opened += 1
        pool.events.append("open")
        try:
            yield pool
        finally:
            pool.closed += 1
            pool.events.append("close")

    server = Server("mounted", lifespan=lifespan)

    @server.tool()
    async def opened(ctx: RequestContext[Pool]) -> int:
        return ctx.lifespan.opened

    @server.tool()
    def opened_sync(ctx: RequestContext[Pool]) -> int:
        return ctx.lifespan.opened

    @server.custom_route("/health")
    async def health(request: HttpRequest) -> dict[str, Any]:
        return {"status": "ok", "pool": pool.opened - pool.closed}

    @server.custom_route("/echo", methods=["POST"])
    def echo(request: HttpRequest) -> HttpReply:
        return HttpReply(request.path, status=201)

    return server


def through(app: Any, url: str) -> Http:
    """A Streamable HTTP connector that reaches `app` in process (httpx's ASGI transport buffers
    whole responses, so no standalone GET stream)."""
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE)
    return Http(url, client=client, get_stream=False)


async def call_both_eras(app: Any, url: str) -> list[int]:
    """`opened` and `opened_sync` through the mount, in the handshake era and the newest one."""
    seen = []
    for mode in ("handshake", "auto"):
        connector = through(app, url)
        assert connector.client is not None
        async with connector.client, Client(connector, mode=mode) as client:
            for tool in ("opened", "opened_sync"):
                seen.append((await client.call_tool(tool)).structured_content["result"])
    return seen


async def test_starlette_mount_runs_the_lifespan_once_and_serves_both_eras() -> None:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import PlainTextResponse
    from starlette.routing import Mount, Route

    async def home(request: Request) -> PlainTextResponse:
        return PlainTextResponse("home")

    pool = Pool()
    mcp = make_server(pool).http_app()
    outer = Starlette(routes=[Route("/", home), Mount("/tools", app=mcp)], lifespan=mcp.lifespan)
    async with outer.router.lifespan_context(outer):
        assert pool.events == ["open"] and mcp.running
        assert await call_both_eras(outer, f"{BASE}/tools/mcp") == [1, 1, 1, 1]
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=outer), base_url=BASE) as web:
            assert (await web.get("/")).text == "home"
            health = await web.get("/tools/health")
            assert health.status_code == 200 and health.json() == {"status": "ok", "pool": 1}
            echoed = await web.post("/tools/echo", content=b"x")
            assert (echoed.status_code, echoed.text) == (201, "/tools/echo")
            assert (await web.get("/tools/echo")).status_code == 405
    assert pool.events == ["open", "close"] and not mcp.running


async def test_fastapi_mount_inside_the_applications_own_lifespan() -> None:
    from fastapi import FastAPI

    pool = Pool()
    mcp = make_server(pool).http_app()
    order: list[str] = []

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        order.append("app starts")
        async with mcp.run():  # the MCP endpoint (and the server's lifespan) inside the app's own
            order.append(f"mcp running, pool opened {pool.opened}")
            yield
        order.append(f"app stops, pool closed {pool.closed}")

    app = FastAPI(lifespan=lifespan)

    @app.get("/hello")
    async def hello() -> dict[str, str]:
        return {"hello": "world"}

    app.mount("/agents", mcp)
    async with app.router.lifespan_context(app):
        assert await call_both_eras(app, f"{BASE}/agents/mcp") == [1, 1, 1, 1]
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE) as web:
            assert (await web.get("/hello")).json() == {"hello": "world"}
            assert (await web.get("/agents/health")).json() == {"status": "ok", "pool": 1}
    assert order == ["app starts", "mcp running, pool opened 1", "app stops, pool closed 1"]
    assert pool.events == ["open", "close"]


async def test_fastapi_startup_fails_when_the_servers_lifespan_does() -> None:
    from fastapi import FastAPI

    mcp = make_server(Pool(), fail=True).http_app()
    app = FastAPI(lifespan=mcp.lifespan)
    app.mount("/mcp-server", mcp)
    with pytest.raises(RuntimeError, match="the database is down"):
        async with app.router.lifespan_context(app):
            pytest.fail("the application started without its MCP server")
    assert not mcp.running


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_starlette_under_uvicorn_gets_the_lifespan_from_the_server(anyio_backend: str) -> None:
    """Served for real: uvicorn sends the ASGI lifespan to Starlette, which runs the MCP app's."""
    import uvicorn
    from starlette.applications import Starlette
    from starlette.routing import Mount

    pool = Pool()
    mcp = make_server(pool).http_app()
    outer = Starlette(routes=[Mount("/v1", app=mcp)], lifespan=mcp.lifespan)
    sock = bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    web = uvicorn.Server(uvicorn.Config(outer, lifespan="on", log_level="warning"))
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: web.serve(sockets=[sock]))
        url = f"http://127.0.0.1:{port}/v1/mcp"
        for mode in ("handshake", "auto"):  # the socket listens already: connections wait for uvicorn
            async with Client(url, mode=mode) as client:
                assert (await client.call_tool("opened")).structured_content == {"result": 1}
        web.should_exit = True
    sock.close()
    assert pool.events == ["open", "close"]
