"""A Streamable HTTP server built with the official SDK (`mcp`), under uvicorn: the peer for our HTTP
client's interop tests. It binds 127.0.0.1 on a free port, prints the port on its first line of
output (once the socket listens), then serves `/mcp` in both eras (sessions for the handshake era).

    python official_http_server.py [--json]      (--json: JSON answers instead of SSE streams)
"""

import socket
import sys
from typing import Annotated

import anyio
import uvicorn
from mcp.server.elicitation import ElicitationResult
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.resolve import Elicit, Resolve
from pydantic import BaseModel

server = MCPServer("official-http-peer", instructions="served by the official SDK over HTTP")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def protocol_info(ctx: Context) -> str:
    """The protocol version this request was served under."""
    return str(ctx.protocol_version)


@server.tool()
async def count(ctx: Context, upto: int) -> str:
    """Report progress up to `upto`, then say done."""
    for step in range(1, upto + 1):
        await ctx.report_progress(step, upto)
    return "done"


class Confirm(BaseModel):
    ok: bool


class Name(BaseModel):
    name: str


class Colour(BaseModel):
    colour: str


def ask_confirm(item: str) -> Elicit[Confirm]:
    return Elicit(f"Delete {item}?", Confirm)


def ask_name() -> Elicit[Name]:
    return Elicit("Your name?", Name)


def ask_colour(who: Annotated[Name, Resolve(ask_name)]) -> Elicit[Colour]:
    return Elicit(f"{who.name}, your favourite colour?", Colour)


@server.tool()
def delete(item: str, answer: Annotated[ElicitationResult[Confirm], Resolve(ask_confirm)]) -> str:
    """Delete an item after asking the user."""
    if answer.action != "accept":
        return f"kept {item}"
    return f"deleted {item} (ok={answer.data.ok})"


@server.tool()
def preference(who: Annotated[Name, Resolve(ask_name)], colour: Annotated[Colour, Resolve(ask_colour)]) -> str:
    """Two questions, the second built from the first answer: two rounds."""
    return f"{who.name} likes {colour.colour}"


async def main() -> None:
    # IPPROTO_TCP named explicitly: asyncio sets TCP_NODELAY only on sockets that say so, and without it
    # every answer written in two parts waits out the peer's delayed ACK (some 40 ms).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    print(sock.getsockname()[1], flush=True)
    app = server.streamable_http_app(json_response="--json" in sys.argv)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    await uvicorn.Server(config).serve(sockets=[sock])


if __name__ == "__main__":
    anyio.run(main)
