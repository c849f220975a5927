"""The HTTP client benchmark's peer: the official SDK's Streamable HTTP server (the tools of
`apps.py`) under uvicorn. It prints its port once listening on 127.0.0.1.

    python official_http_peer.py [--json]      (--json: JSON answers instead of SSE streams)
"""

import socket
import sys

import anyio
import uvicorn
from apps import official_server


async def main() -> None:
    # IPPROTO_TCP named explicitly: asyncio sets TCP_NODELAY only on sockets that say so, and without it
    # every answer written in two parts waits out the peer's delayed ACK (some 40 ms).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    print(sock.getsockname()[1], flush=True)
    app = official_server().streamable_http_app(json_response="--json" in sys.argv)
    await uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False)).serve(sockets=[sock])


if __name__ == "__main__":
    anyio.run(main)
