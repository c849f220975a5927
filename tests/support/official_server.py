"""A stdio server built with the official SDK (`mcp`), the peer for our client's interop tests."""

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("official-peer", instructions="served by the official SDK")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def echo(text: str) -> str:
    """Echo the text."""
    return text


@server.tool()
def protocol_info(ctx: Context) -> str:
    """The protocol version this request was served under."""
    return str(ctx.protocol_version)


@server.prompt()
def greet(name: str) -> str:
    """Greet someone."""
    return f"Hello {name}"


@server.resource("peer://static", mime_type="text/plain")
def static() -> str:
    """A static resource."""
    return "static text"


@server.resource("peer://items/{item_id}", mime_type="text/plain")
def item(item_id: str) -> str:
    """A templated resource."""
    return f"item {item_id}"


if __name__ == "__main__":
    server.run()
