"""Reliability under hostile input and load, measured (not timed in tests):

1. random frames per era fed to a server in memory, with a liveness probe after every batch:
   crashes (the serving task ended) and hangs (no probe answer in 10 s) are counted;
2. a flooding peer that writes requests and reads nothing: how many the server takes in and
   how much memory the session holds, against the in-flight bound;
3. the time a 100 KB URI takes to match a resource template (the attack that was quadratic).

    python bench/bench_reliability.py [--frames 100000]
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _util import save, table
from mcpgen.runtime import RequestContext, Server, ServerLimits, elicit, memory_pair
from mcpgen.runtime.core.transport import Frame
from mcpgen.runtime.protocol.uritemplate import UriTemplate

V25, V26 = "2025-11-25", "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": V26, "io.modelcontextprotocol/clientCapabilities": {}}
METHODS = [
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "prompts/get",
    "resources/read",
    "server/discover",
    "subscriptions/listen",
    "notifications/cancelled",
    "completion/complete",
    "x/y",
    None,
    5,
]


def make_server() -> Server:
    server = Server("stress", limits=ServerLimits(page_size=1))

    @server.tool()
    def echo(text: str = "") -> str:
        return text

    @server.tool()
    def ask(ctx: RequestContext) -> str:
        if ctx.input_response("q") is None:
            return ctx.input_required(q=elicit("?", {"type": "object", "properties": {"a": {"type": "string"}}}))
        return "ok"

    @server.resource("mem://{x}")
    def thing(x: str) -> str:
        return x

    return server


def value(rng: random.Random, depth: int = 0) -> Any:  # noqa: PLR0911 - one return per kind of JSON value
    kind = rng.randrange(9 if depth < 3 else 6)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False])
    if kind == 2:
        return rng.randint(-(2**40), 2**40)
    if kind == 3:
        return rng.random() * 1e6
    if kind in (4, 5):
        return "".join(rng.choice('ab/.?%é☃{}"\\') for _ in range(rng.randrange(12)))
    if kind in (6, 7):
        return {str(value(rng, depth + 1))[:8]: value(rng, depth + 1) for _ in range(rng.randrange(4))}
    return [value(rng, depth + 1) for _ in range(rng.randrange(4))]


def frame(rng: random.Random, modern: bool) -> bytes:
    roll = rng.random()
    if roll < 0.1:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(60)))
    if roll < 0.15:
        return rng.choice([b"NaN", b"[1,2]", b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":Infinity}}'])
    if roll < 0.2:
        return b'{"jsonrpc":"2.0","id":9,"method":"ping","params":{"p":"' + b"x" * rng.randrange(4097, 9000) + b'"}}'
    message: dict[str, Any] = {"jsonrpc": rng.choice(["2.0", "2.0", "2.0", "1.0"]), "method": rng.choice(METHODS)}
    if rng.random() < 0.8:
        message["id"] = rng.choice([rng.randint(-5, 50), "s", None, True, 1.5])
    params = value(rng) if rng.random() < 0.3 else {}
    if isinstance(params, dict):
        for key in ("name", "arguments", "uri", "cursor", "requestState", "inputResponses"):
            if rng.random() < 0.3:
                params[key] = value(rng)
        if modern:
            params["_meta"] = META
    message["params"] = params
    return json.dumps(message).encode()


async def fuzz(era: str, count: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    crashes = hangs = 0
    sent = 0
    batch = 50
    while sent < count:
        client_end, server_end = memory_pair(max_message_bytes=4096)
        server = make_server()
        ended = anyio.Event()

        async def serve(server: Server = server, transport: Any = server_end, ended: anyio.Event = ended) -> None:
            try:
                await server.serve(transport)
            finally:
                ended.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(serve)
            if era == "handshake":
                init = {"protocolVersion": V25, "capabilities": {}, "clientInfo": {"name": "f", "version": "1"}}
                init_request = {"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": init}
                await client_end.send.send(Frame(json.dumps(init_request).encode()))
            for _ in range(batch):
                await client_end.send.send(Frame(frame(rng, era == "modern")))
                sent += 1
            probe = {"jsonrpc": "2.0", "id": "probe", "method": "tools/list", "params": {"_meta": META}}
            await client_end.send.send(Frame(json.dumps(probe).encode()))
            with anyio.move_on_after(10) as scope:
                while True:
                    item = await client_end.receive.receive()
                    if b'"id":"probe"' in item.data:
                        break
            if scope.cancelled_caught:
                hangs += 1
            if ended.is_set():
                crashes += 1
            tg.cancel_scope.cancel()
    return {"case": f"random frames, {era} era", "frames": sent, "crashes": crashes, "hangs": hangs}


async def flood(requests: int, bound: int) -> dict[str, Any]:
    server = make_server()
    client_end, server_end = memory_pair(buffer=16)
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    taken = 0
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: server.serve(server_end, max_in_flight=bound))
        with anyio.move_on_after(3):
            for i in range(requests):
                params = {"_meta": META, "name": "echo", "arguments": {"text": "x" * 10_000}}
                request = {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params}
                await client_end.send.send(Frame(json.dumps(request).encode()))
                taken += 1
        held = tracemalloc.get_traced_memory()[0] - before
        tg.cancel_scope.cancel()
    tracemalloc.stop()
    return {
        "case": f"flood of {requests} requests, nothing read (max_in_flight={bound})",
        "accepted": taken,
        "held_kib": round(held / 1024),
    }


def uri_time() -> dict[str, Any]:
    template = UriTemplate("file:///{name}.{ext}")
    uri = "file:///" + "a." * 50_000 + "/"
    best = min(_timed(template, uri) for _ in range(5))
    return {"case": "match a 100 KB URI against file:///{name}.{ext}", "seconds": round(best, 4)}


def _timed(template: UriTemplate, uri: str) -> float:
    start = time.perf_counter()
    template.match(uri)
    return time.perf_counter() - start


async def main(frames: int) -> None:
    rows = [await fuzz("modern", frames, 1), await fuzz("handshake", frames, 2)]
    rows.append(await flood(10_000, 256))
    rows.append(uri_time())
    for row in rows:
        print(json.dumps(row))
    save("bench_reliability", rows)
    print(
        table(
            [{"case": r["case"], "result": {k: v for k, v in r.items() if k != "case"}} for r in rows],
            ["case", "result"],
        )
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--frames", type=int, default=100_000)
    anyio.run(main, parser.parse_args().frames)
