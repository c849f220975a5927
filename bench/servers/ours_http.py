"""The benchmark's HTTP server, built with mcpgen's runtime: one `add` tool, served by uvicorn."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from mcpgen.runtime import Server

server = Server("bench", logging=False)


@server.tool()
def add(a: int, b: int) -> int:
    return a + b


if __name__ == "__main__":
    server.run_http("127.0.0.1", int(sys.argv[1]))
