"""A round-robin HTTP proxy for multi-process tests: request n goes to backend n mod N.

    python tests/support/roundrobin.py --port 8000 --to http://127.0.0.1:8001 --to http://127.0.0.1:8002

A plain ASGI app over httpx, run by uvicorn. It forwards each request (method, path, headers,
body) to the next backend in turn, whatever connection it arrived on, and streams the answer
back (SSE included); a client that hangs up closes the upstream request too. The deterministic
spread is what multi-worker tests need: with keep-alive, a kernel-balanced `--workers N` pins a
client's requests to one worker.
"""

from __future__ import annotations

import argparse
import itertools
from collections.abc import Callable, Sequence
from typing import Any

import anyio
import httpx

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "content-length"}


class RoundRobin:
    def __init__(self, backends: Sequence[str]) -> None:
        self.backends = list(backends)
        self._turn = itertools.count()
        self.served: list[str] = []  # which backend took each request, in order
        self.client = httpx.AsyncClient(timeout=httpx.Timeout(None), limits=httpx.Limits(max_keepalive_connections=0))

    async def __call__(self, scope: dict[str, Any], receive: Callable[..., Any], send: Callable[..., Any]) -> None:
        if scope["type"] == "lifespan":
            await receive()  # startup
            await send({"type": "lifespan.startup.complete"})
            await receive()  # shutdown
            await self.client.aclose()
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["type"] != "http":
            return
        backend = self.backends[next(self._turn) % len(self.backends)]
        self.served.append(backend)
        body = b""
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        # values without surrounding whitespace (RFC 9110 5.5): h11 strips it, httptools keeps it, httpx refuses it
        headers = [(k, v.strip(b" \t")) for k, v in scope["headers"] if k.decode("latin-1").lower() not in HOP_BY_HOP]
        url = backend + scope["path"] + ("?" + scope["query_string"].decode() if scope.get("query_string") else "")
        request = self.client.build_request(scope["method"], url, headers=headers, content=body)
        async with anyio.create_task_group() as tg:

            async def hang_up() -> None:
                while (await receive())["type"] != "http.disconnect":
                    pass
                tg.cancel_scope.cancel()

            tg.start_soon(hang_up)
            response = await self.client.send(request, stream=True)
            try:
                out = [
                    (k.encode(), v.encode()) for k, v in response.headers.multi_items() if k.lower() not in HOP_BY_HOP
                ]
                await send({"type": "http.response.start", "status": response.status_code, "headers": out})
                async for chunk in response.aiter_raw():
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
                await send({"type": "http.response.body", "body": b"", "more_body": False})
            finally:
                await response.aclose()
            tg.cancel_scope.cancel()


def main() -> None:
    parser = argparse.ArgumentParser(description="round-robin HTTP proxy")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--to", action="append", required=True, help="a backend base URL (repeat)")
    args = parser.parse_args()
    import uvicorn

    uvicorn.run(RoundRobin(args.to), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
