"""A server with a lifespan that counts how often it started in this process (for the tests that
serve it over stdio, `mcpgen serve`, `run_http` and the worker app factory).

    python lifespan_server.py              # stdio
    python lifespan_server.py --http PORT  # Server.run_http
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Annotated, Any

from mcpgen.runtime import Depends, RequestContext, Server

STARTS: list[int] = []  # one entry per start of the lifespan in this process


@dataclass
class Pool:
    """Stands for what a lifespan opens once (a database pool, a client session)."""

    generation: int
    open: bool = True


@asynccontextmanager
async def lifespan(server: Server[Any]) -> AsyncIterator[Pool]:
    STARTS.append(os.getpid())
    pool = Pool(len(STARTS))
    print(f"lifespan started {len(STARTS)}", file=sys.stderr, flush=True)
    try:
        yield pool
    finally:
        pool.open = False
        print("lifespan stopped", file=sys.stderr, flush=True)


server = Server("lifespan", lifespan=lifespan)


def pool_of(ctx: RequestContext[Pool]) -> Pool:
    return ctx.lifespan


@server.tool()
def lifespan_info(pool: Annotated[Pool, Depends(pool_of)]) -> dict[str, int | bool]:
    return {"starts": len(STARTS), "generation": pool.generation, "open": pool.open, "pid": os.getpid()}


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--http":
        server.run_http(port=int(sys.argv[2]), log_level="info")
    else:
        server.run_stdio()
