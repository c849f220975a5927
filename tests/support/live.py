"""A server's Streamable HTTP app served for real on a free loopback port (uvicorn on asyncio,
hypercorn on trio), for the length of an `async with`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from mcpgen.runtime import Server
from mcpgen.runtime.server.http.run import bind, serve_http


@asynccontextmanager
async def live(server: Server, **options: Any) -> AsyncIterator[tuple[str, anyio.Event]]:
    """The server's app served on a free loopback port; yields its URL and the shutdown trigger."""
    sock = bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    stop = anyio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: serve_http(server.http_app(**options), sockets=[sock], shutdown=stop))
        try:
            yield f"http://127.0.0.1:{port}/mcp", stop
        finally:
            stop.set()
    sock.close()
