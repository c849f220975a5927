"""Several uvicorn workers on a listening socket bound here with IPPROTO_TCP named: the reference
for `uvicorn --workers N`, whose own socket leaves the protocol 0, so asyncio never sets TCP_NODELAY
on the connections it accepts and a response written in two parts waits out the client's delayed
ACK (some 40 ms). uvloop sets TCP_NODELAY either way. Everything else is uvicorn's supervisor.

    python bench/servers/multi.py [--workers 2] [--port 8000] [--http h11] [--loop asyncio]
        [--app-dir DIR] MODULE:FACTORY
"""

from __future__ import annotations

import argparse
import socket
import sys

import uvicorn
from uvicorn.supervisors import Multiprocess


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("app")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--http", default="h11")
    parser.add_argument("--loop", default="asyncio")
    parser.add_argument("--app-dir", default="")
    options = parser.parse_args()
    if options.app_dir:
        sys.path.insert(0, options.app_dir)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", options.port))
    sock.listen(2048)
    sock.set_inheritable(True)
    config = uvicorn.Config(
        options.app, factory=True, workers=options.workers, http=options.http, loop=options.loop,
        access_log=False, log_level="warning",
    )  # fmt: skip
    Multiprocess(config, sockets=[sock]).run()


if __name__ == "__main__":
    main()
