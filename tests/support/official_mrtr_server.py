"""A stdio server built with the official SDK whose tools ask the client for input (elicitation,
sampling, roots) through its `Resolve` markers: MRTR on modern sessions, server->client requests
on handshake-era ones. The peer for our client's MRTR interop tests."""

from typing import Annotated

from mcp.server.elicitation import ElicitationResult
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.resolve import Elicit, ListRoots, Resolve, Sample
from mcp.types import CreateMessageResult, ListRootsResult, SamplingMessage, TextContent
from pydantic import BaseModel

server = MCPServer("official-mrtr-peer")


class Confirm(BaseModel):
    ok: bool
    note: str = "none"


def ask_confirm(item: str) -> Elicit[Confirm]:
    return Elicit(f"Delete {item}?", Confirm)


def ask_model() -> Sample:
    return Sample([SamplingMessage(role="user", content=TextContent(type="text", text="Say hi"))], max_tokens=20)


def ask_roots() -> ListRoots:
    return ListRoots()


@server.tool()
def delete(item: str, answer: Annotated[ElicitationResult[Confirm], Resolve(ask_confirm)]) -> str:
    """Delete an item after asking the user."""
    if answer.action != "accept":
        return f"kept {item} ({answer.action})"
    return f"deleted {item} (ok={answer.data.ok}, note={answer.data.note})"


@server.tool()
def ask_llm(reply: Annotated[CreateMessageResult, Resolve(ask_model)]) -> str:
    """Ask the client's model."""
    return f"model said: {reply.content.text}"


@server.tool()
def workspace(roots: Annotated[ListRootsResult, Resolve(ask_roots)]) -> str:
    """List the client's roots."""
    return ",".join(str(r.uri) for r in roots.roots)


if __name__ == "__main__":
    server.run()
