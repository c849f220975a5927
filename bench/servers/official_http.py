"""The benchmark's HTTP server, built with the official SDK: the same `add` tool, served by uvicorn."""

import sys

import uvicorn
from mcp.server.mcpserver import MCPServer

server = MCPServer("bench")


@server.tool()
def add(a: int, b: int) -> int:
    return a + b


if __name__ == "__main__":
    uvicorn.run(server.streamable_http_app(), host="127.0.0.1", port=int(sys.argv[1]), log_level="info")
