"""The server toolkit as a user writes it (threads, errors, middleware, lifespan, injection,
telemetry, content, registry, visibility, routes, mounting): type-checked strictly in CI, and run
by test_user_code."""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Annotated, Any

from mcpgen.runtime import (
    Audio,
    CallNext,
    Client,
    ClientHooks,
    Depends,
    Diagnostics,
    File,
    Image,
    McpError,
    Middleware,
    NotFound,
    OutgoingRequest,
    RateLimit,
    RequestContext,
    RequestInfo,
    RequestLogging,
    Server,
    ServerAdvertising,
    ServerLimits,
    Telemetry,
    Timing,
    ToolCall,
    ToolError,
    visible_by_scopes,
)
from mcpgen.runtime.server.http.routes import HttpReply, HttpRequest
from starlette.applications import Starlette
from starlette.routing import Mount


@dataclass
class Database:
    """What the lifespan opens once and every handler shares."""

    rows: dict[str, str] = field(default_factory=lambda: {"1": "first row"})
    open: bool = True

    def get(self, key: str) -> str | None:
        return self.rows.get(key)


@asynccontextmanager
async def lifespan(server: Server[Any]) -> AsyncGenerator[Database]:
    database = Database()  # once per process, however the server is served
    try:
        yield database
    finally:
        database.open = False


class Audit(Middleware):
    """Wraps every request, and every tool call."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def on_request(self, request: RequestInfo, call_next: CallNext) -> Any:
        self.seen.append(f"{request.era} {request.method} {request.target or ''}".strip())
        return await call_next()

    async def on_tool_call(self, call: ToolCall, call_next: CallNext) -> Any:
        if call.name == "wipe" and call.principal is None:
            raise ToolError("only an authenticated caller may wipe")
        return await call_next()


audit = Audit()
timing = Timing()
server = Server(
    "toolkit",
    lifespan=lifespan,
    middleware=[RequestLogging(), RateLimit(50, per=1.0), timing, audit],
    limits=ServerLimits(worker_threads=8),
    diagnostics=Diagnostics(error_details=False, telemetry=Telemetry()),
    advertising=ServerAdvertising(visibility=visible_by_scopes),
)


def database(ctx: RequestContext[Database]) -> Database:
    return ctx.lifespan  # typed: Server[Database] from the lifespan


def cursor(db: Annotated[Database, Depends(database)]) -> Iterator[dict[str, str]]:
    view = dict(db.rows)  # a generator provider cleans up after the call
    yield view
    view.clear()


@server.tool()
def lookup(key: str, db: Annotated[Database, Depends(database)]) -> str:
    """A plain `def` runs in a worker thread: a slow query holds up no other request."""
    time.sleep(0.01)
    found = db.get(key)
    if found is None:
        raise ToolError(f"no row {key}")  # the model reads this
    return found


@server.tool()
async def count(rows: Annotated[dict[str, str], Depends(cursor)]) -> int:
    return len(rows)


@server.tool()
def crash() -> str:
    raise RuntimeError("password=hunter2 in /srv/app/db.py")  # the client sees an error id only


@server.tool()
def chart() -> Image:
    return Image(b"\x89PNG\r\n\x1a\n", "image/png")


@server.tool()
def report() -> list[str | Image | Audio | File]:
    return ["the figures:", Image(b"\x89PNG\r\n\x1a\n"), Audio(b"RIFF", "audio/wav"), File(b"%PDF", "application/pdf")]


@server.tool()
def raw() -> bytes:
    return b"\x00\x01"


@server.tool(scopes=["admin"])  # hidden from, and refused to, callers without the scope
def wipe() -> str:
    return "wiped"


@server.resource("rows://{key}")
def row(key: str, db: Annotated[Database, Depends(database)]) -> str:
    found = db.get(key)
    if found is None:
        raise NotFound(f"no row {key}")  # the protocol's not-found error
    return found


def lookup_v2(key: str) -> str:
    return key.upper()


server.add_tool(lookup_v2, name="lookup", replace=True)  # a second registration needs replace=True


@server.custom_route("/health")
async def health(request: HttpRequest) -> dict[str, str]:
    return {"status": "ok"}


@server.custom_route("/ready")
def ready(request: HttpRequest) -> HttpReply:
    return HttpReply("ready", status=200)


mcp = server.http_app()
app = Starlette(routes=[Mount("/agents", app=mcp)], lifespan=mcp.lifespan)  # or FastAPI: app.mount(...)


async def traced(request: OutgoingRequest, call_next: CallNext) -> Any:
    """A client hook around every request sent."""
    if request.params is not None:
        request.params.setdefault("_meta", {})["example/trace"] = "on"
    return await call_next()


async def main() -> list[str]:
    """Every feature once, in process (`test_user_code` runs it)."""
    seen: list[str] = []
    hooks = ClientHooks(on_request=traced, on_notification=lambda method, params: seen.append(method))
    async with Client(server, hooks=hooks) as client:
        names = [tool.name async for tool in client.tools()]
        seen.append(",".join(sorted(names)))
        seen.append(str((await client.call_tool("lookup", {"key": "a"})).content[0]))
        seen.append(str((await client.call_tool("count")).structured_content))
        crashed = await client.call_tool("crash")
        seen.append(f"crash is_error={crashed.is_error}")
        seen.append(" ".join(block.type for block in (await client.call_tool("report")).content))
        try:
            await client.read_resource("rows://nope")
        except McpError as exc:
            seen.append(f"not found {exc.code}")
    return seen
