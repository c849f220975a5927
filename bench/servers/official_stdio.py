"""The benchmark's stdio server, built with the official SDK: the same `add` tool."""

from mcp.server.mcpserver import MCPServer

server = MCPServer("bench")


@server.tool()
def add(a: int, b: int) -> int:
    return a + b


if __name__ == "__main__":
    server.run()
