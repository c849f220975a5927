"""What the round-trip benchmarks share: the eras, the tool kinds, and a connected client of either
library (in memory or over stdio) to the servers of `servers/apps.py`.

Both libraries' clients have `call_tool(name, arguments)` and answer with a result whose
`structured_content` holds `{"result": ...}`, so one timing loop drives both.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "servers"))

from apps import TOOL_NAMES, official_server, ours_server  # noqa: E402

__all__ = ["TOOL_NAMES", "connect", "kind_label", "official_server", "ours_server", "ours_variant", "runs_on"]

ERAS = {"handshake (2025-11-25)": "legacy", "modern (2026-07-28)": "2026-07-28"}
KINDS = tuple(TOOL_NAMES)  # "sync", "async"
SIDES = ("mcpgen", "official")
ARGS = {"a": 1, "b": 2}


@asynccontextmanager
async def connect(
    side: str, transport: str, mode: str, server: Any = None, client_options: dict[str, Any] | None = None
) -> AsyncIterator[Any]:
    """A connected client of `side`'s library to a server built with the same library: in this
    process ("memory": `Client(server)` for both; `server` shares one between clients) or a child
    process ("stdio"). `client_options`: more keywords for mcpgen's `Client`."""
    if side == "mcpgen":
        from mcpgen.runtime import Client

        target: Any = (
            (ours_server() if server is None else server)
            if transport == "memory"
            else [sys.executable, str(HERE / "servers" / "ours_stdio.py")]
        )
        mode = "handshake" if mode == "legacy" else mode  # its own word
        async with Client(target, mode=mode, **(client_options or {})) as client:
            yield client
    else:
        from mcp import Client as OfficialClient
        from mcp import StdioServerParameters

        target = (
            (official_server() if server is None else server)
            if transport == "memory"
            else StdioServerParameters(command=sys.executable, args=[str(HERE / "servers" / "official_stdio.py")])
        )
        async with OfficialClient(target, mode=mode) as client:
            yield client


VARIANTS = ("quiet", "middleware", "toolmiddleware")
"""What mcpgen's server may add, joined by "-" (`quiet-middleware`): `quiet` (telemetry off on
both sides: what a process without `opentelemetry-api` runs), `middleware` (one pass-through
request middleware), `toolmiddleware` (one pass-through tool middleware)."""


def ours_variant(variant: str) -> tuple[Any, dict[str, Any]]:
    """mcpgen's bench server for a variant ("" for the server as it comes), and the client's options."""
    from mcpgen.runtime import ClientHooks, Diagnostics, Middleware, Telemetry

    words = set(variant.split("-")) - {""}
    unknown = words - set(VARIANTS)
    if unknown:
        raise SystemExit(f"unknown variant: {', '.join(sorted(unknown))} (of {', '.join(VARIANTS)})")
    server, client_options = ours_server(), {}
    if "quiet" in words:
        server = ours_server(diagnostics=Diagnostics(telemetry=Telemetry(enabled=False)))
        client_options["hooks"] = ClientHooks(telemetry=Telemetry(enabled=False))

    class PassRequests(Middleware):
        async def on_request(self, request: Any, call_next: Any) -> Any:
            return await call_next()

    class PassTools(Middleware):
        async def on_tool_call(self, call: Any, call_next: Any) -> Any:
            return await call_next()

    if "middleware" in words:
        server.add_middleware(PassRequests())
    if "toolmiddleware" in words:
        server.add_middleware(PassTools())
    return server, client_options


async def runs_on(client: Any) -> str:
    """Where the server's library runs a sync tool ("event loop thread" or "worker thread")."""
    result = await client.call_tool("where", {})
    if result.structured_content:
        return str(result.structured_content["result"])
    return str(result.content[0].text)


def kind_label(kind: str, where: dict[str, str]) -> str:
    """How each side ran the tool: "mcpgen: event loop thread; official: worker thread"."""
    if kind == "async":
        return "async def on the event loop (both)"
    return "; ".join(f"{side}: {place}" for side, place in where.items())
